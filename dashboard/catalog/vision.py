"""The vision tower of a multimodal config: heads, width, depth, patch geometry and its parameter
estimate (patch embedding, blocks, merger / projector). Writes into a record (:func:`fill_vision`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dashboard.catalog.aliases import MAX_HEADS, MAX_SIZE, VISION_CONFIG_KEYS
from dashboard.catalog.values import as_int, short_repr


def fill_vision(rec: dict, cfg: Mapping, notes: list[str]) -> None:
    """Vision-tower columns of one config into ``rec``: heads, width, depth, MLP width, patch geometry, and
    ``params_vision`` (count; patch embedding, positions, blocks and merger / projector, each cited). Noted."""
    vc = None
    for k in VISION_CONFIG_KEYS:
        v = cfg.get(k)
        if isinstance(v, Mapping) and v:
            vc = v
            break
    xn = cfg.get("cross_attn_every_n_layers")
    if isinstance(xn, int) and not isinstance(xn, bool) and xn > 0:
        notes.append(f"Flamingo-style gated cross-attention every {xn} decoder layers (cross_attn_every_n_layers): "
                     "its heads and widths are not in config.json; not counted in num_cross_attention_layers or params")
    if vc is None:
        rec["has_vision"] = False
        rec["params_vision"] = rec["params_vision_embed"] = rec["params_vision_connector"] = 0.0
        rec["vision_position_embeddings"] = rec["vision_deepstack_layers"] = 0
        for k in ("mm_vision_tower", "vision_tower", "vision_encoder", "vit_path"):
            name = cfg.get(k)
            if isinstance(name, str) and name:
                notes.append(f"vision encoder named only ({k}={short_repr(name, 60)}): its shape is not in config.json; "
                             "has_vision false, params_vision 0")
                break
        return
    rec["has_vision"] = True
    # open_clip / EVA-CLIP style towers (InfiMM, Qwen-VL "visual"): width / layers / heads or head_width,
    # where embed_dim is the output projection, not the tower width
    open_clip = "width" in vc and "layers" in vc and "hidden_size" not in vc

    def first(keys: tuple[str, ...], field: str, hi: int = MAX_SIZE) -> int | None:
        for k in keys:
            if vc.get(k) is not None:
                return as_int(vc.get(k), f"vision {field}", notes, hi=hi)
        return None

    rec["vision_num_heads"] = first(("num_attention_heads", "num_heads", "vt_num_attention_heads", "attention_heads", "n_heads", "heads"), "heads", MAX_HEADS)
    if open_clip:
        vh = first(("width",), "width")
    else:
        vh = first(("hidden_size", "embed_dim", "vt_hidden_size", "width", "d_model", "dim"), "hidden_size")
    if rec["vision_num_heads"] is None and vh:
        hw = first(("head_width", "head_dim"), "head_width")
        if hw and vh % hw == 0:
            rec["vision_num_heads"] = vh // hw
            notes.append(f"vision heads = width {vh} / head_width {hw} = {vh // hw}")
    depth = first(("depth", "num_hidden_layers", "vt_num_hidden_layers", "num_layers", "layers", "n_layers"), "depth", 1 << 20)
    glob = first(("num_global_layers",), "num_global_layers", 1 << 20)
    if depth is not None and glob:
        depth += glob
        notes.append(f"vision depth includes {glob} global layers")
    rec["vision_hidden_size"] = vh
    rec["vision_depth"] = depth
    vi = first(("intermediate_size", "vt_intermediate_size", "mlp_dim", "ffn_dim"), "intermediate_size")
    if vi is None and vh is not None and isinstance(vc.get("mlp_ratio"), (int, float)) and not isinstance(vc.get("mlp_ratio"), bool):
        ratio = vc.get("mlp_ratio")
        if math.isfinite(ratio) and 0 < ratio < 100:
            vi = int(vh * ratio)
            notes.append(f"vision intermediate_size = hidden_size x mlp_ratio {ratio}")
    rec["vision_intermediate_size"] = vi
    if rec["vision_num_heads"] is None:
        notes.append("vision_config has no head count")
    # vision tower estimate: blocks (qkv + o + 2-matrix MLP, 3 when gated) + patch embedding + learned
    # positions + merger / projector
    vmt = vc.get("model_type") if isinstance(vc.get("model_type"), str) else ""
    top_mt = (rec["model_type"] or "").lower()
    # learned position table rows
    pos_rows = 0
    npe = as_int(vc.get("num_position_embeddings"), "vision num_position_embeddings", notes) if vc.get("num_position_embeddings") is not None else None
    pes = as_int(vc.get("position_embedding_size"), "vision position_embedding_size", notes) if vc.get("position_embedding_size") is not None else None
    vpet = vc.get("position_embedding_type")
    if npe:
        pos_rows = npe  # Qwen3-VL / Qwen3.5 pos_embed (vllm models/qwen3_vl.py:617)
    elif pes:
        pos_rows = 2 * pes  # Gemma-4 position_embedding_table: one row set per image axis
    elif not (isinstance(vpet, str) and vpet.lower() in ("rope", "rotary", "none")) and not open_clip \
            and ("siglip" in vmt or "idefics" in vmt or "glm4v" in vmt or "clip" in vmt or "llama4" in vmt):
        # SigLIP / Idefics / GLM-4V / CLIP: one row per patch of the training resolution (+1 class token for CLIP)
        img = as_int(vc.get("image_size"), "vision image_size", [], hi=1 << 20)
        ps = as_int(vc.get("patch_size"), "vision patch_size", [], hi=4096)
        if img and ps:
            pos_rows = (img // ps) ** 2 + (1 if ("clip" in vmt or "llama4" in vmt) else 0)
    rec["vision_position_embeddings"] = pos_rows
    ds = vc.get("deepstack_visual_indexes")
    rec["vision_deepstack_layers"] = len(ds) if isinstance(ds, list) and len(ds) <= 1024 else 0
    if vh and depth:
        gated = ((isinstance(vc.get("hidden_act"), str) and vc.get("hidden_act") in ("silu", "swiglu"))
                 or vc.get("naiveswiglu") is True or vmt.startswith("gemma4"))  # Gemma4VisionMLP: gate/up/down
        patch = as_int(vc.get("patch_size"), "vision patch_size", [], hi=4096) or 14
        chans = as_int(vc.get("in_channels") or vc.get("num_channels"), "vision channels", [], hi=64) or 3
        tps = as_int(vc.get("temporal_patch_size"), "vision temporal_patch_size", [], hi=64) or 1
        embed = chans * tps * patch * patch * vh + pos_rows * vh
        merge = as_int(vc.get("spatial_merge_size"), "vision spatial_merge_size", [], hi=64) or 1
        mks = vc.get("merge_kernel_size")
        mk = [as_int(x, "vision merge_kernel_size", [], hi=64) for x in mks] if isinstance(mks, list) and len(mks) == 2 else []
        out = as_int(vc.get("out_hidden_size") or vc.get("projection_dim") or vc.get("vision_output_dim")
                      or vc.get("text_hidden_size") or vc.get("out_dim") or vc.get("output_dim")
                      or (vc.get("embed_dim") if open_clip else None), "vision out dim", []) or rec["hidden_size"] or vh
        # attention width: MoonViT (Kimi-K3) projects q/k/v to qkv_hidden_size (kimi_k25_vit.py wqkv / wo)
        qkv = as_int(vc.get("qkv_hidden_size"), "vision qkv_hidden_size", notes) or vh
        attn = 4 * vh * qkv
        mlp = (3 if gated else 2) * vh * (vi or 4 * vh)
        scale = as_int(cfg.get("scale_factor"), "scale_factor", notes, hi=64) if cfg.get("scale_factor") is not None else None
        if top_mt in ("glm4v", "glm4v_moe"):
            # GLM-4.xV (vLLM models/glm4_1v.py:606-692): the blocks' gated MLP is out_hidden_size wide; the
            # merger (Glm4vPatchMerger) is proj (out x out) + a gated MLP of intermediate_size at out_hidden_size;
            # a Conv2d downsample (hidden x out x merge^2) and a learned position embedding of
            # (image_size / patch_size)^2 rows replace the generic merger
            mlp = 3 * vh * out
            if not pos_rows:
                img = as_int(vc.get("image_size"), "vision image_size", notes, hi=1 << 16) or 0
                pos_rows = (img // patch) ** 2
                rec["vision_position_embeddings"] = pos_rows
                embed += pos_rows * vh
            embed += vh * out * merge * merge
            merger = out * out + 3 * out * (vi or 4 * out)
        elif scale and top_mt.startswith("idefics"):
            # Idefics3 connector: pixel shuffle by scale_factor, then one linear (vllm models/idefics3.py:356-364)
            merger = vh * scale * scale * out
        elif top_mt == "minimax_m3_vl":
            # MiniMax-M3 (vLLM models/minimax_m3/common/vision_tower.py:530-660): projector vision width ->
            # projector_hidden_size -> text width, then the patch merger (text width x spatial_merge^2 ->
            # projector_hidden_size -> text width, img_token_compression_config); both with biases by default
            th = rec["hidden_size"] or out
            mid = as_int(cfg.get("projector_hidden_size"), "projector_hidden_size", notes) or th
            comp = cfg.get("img_token_compression_config") or vc.get("img_token_compression_config")
            sms = 2
            if isinstance(comp, Mapping) and comp.get("spatial_merge_size") is not None:
                sms = as_int(comp.get("spatial_merge_size"), "img_token_compression_config.spatial_merge_size",
                              notes, hi=64) or 2
            merger = (vh * mid + mid + mid * th + th) + (th * sms * sms * mid + mid + mid * th + th)
        elif top_mt.startswith(("gemma3", "gemma4")) and merge == 1:
            # Gemma-3 / Gemma-4: one projection vision width -> text width (gemma4_mm.py:1010)
            merger = vh * out
        else:
            if merge == 1 and len(mk) == 2 and all(mk):
                # MoonViT (Kimi-VL / K2.5 / K3): patches merged by merge_kernel_size (kh x kw) before the projector
                mi = vh * mk[0] * mk[1]
            else:
                mi = vh * merge * merge
            # Qwen3-VL: the final merger plus one per deepstack_visual_indexes entry (models/qwen3_vl.py)
            merger = (1 + rec["vision_deepstack_layers"]) * (mi * mi + mi * out)
            ph, pw = vc.get("init_pos_emb_height"), vc.get("init_pos_emb_width")
            if (not pos_rows and isinstance(ph, int) and isinstance(pw, int) and not isinstance(ph, bool)
                    and not isinstance(pw, bool) and 0 < ph * pw <= (1 << 24)):
                # MoonViT learned 2-D position embedding (init_pos_emb_height x width)
                rec["vision_position_embeddings"] = pos_rows = ph * pw
                embed += ph * pw * vh
        block = attn + mlp + 4 * vh
        rec["params_vision"] = float(depth * block + embed + merger)
        rec["params_vision_embed"] = float(embed)
        rec["params_vision_connector"] = float(merger)
    else:
        rec["params_vision"] = 0.0
        rec["params_vision_embed"] = rec["params_vision_connector"] = 0.0
        notes.append("vision tower size unknown: params_vision = 0")
