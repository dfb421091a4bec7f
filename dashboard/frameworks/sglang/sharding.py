"""SGLang's attention-TP, KV pool and expert sharding (mixed into :class:`dashboard.frameworks.sglang.SGLang`).

Sources (SGLang 0.5.23 wheel, ``python/sglang/srt/``):

* attention-TP is per model FILE. Files that build attention on the attention-TP group (Qwen3,
  Qwen3-MoE, DeepSeek MLA, GLM-4-MoE, gpt-oss, ...: ``get_attention_tp_size()``) split heads over
  ``tp / attn_dp``; the others (Llama, Qwen2, Gemma, Mixtral, ...) over the full TP even under
  DP-attention: ``models/llama.py:181`` ``tp_size = get_parallel().tp_size``, ``:194``
  ``self.num_kv_heads = max(1, self.total_num_kv_heads // tp_size)``, and ``QKVParallelLinear`` on the
  default ``"tp"`` group (``layers/linear.py:123``, ``:1132``). The per-file table is the executed one,
  :data:`dashboard.frameworks.sglang.rules_executed_preds.ATTN_ASSERTS` (0.5.21 / 0.5.23 conformance runs).
* the KV POOL is sized with the attention-TP size whatever the model file does:
  ``model_executor/pool_configurator.py:356`` ``tp_size = get_parallel().attn_tp_size`` then ``:492``
  ``model_config.get_num_kv_heads(tp_size, dcp_size)``; ``mem_cache/kv_cache_configurator.py:1047-1048``
  and ``:2197`` (``head_num=get_num_kv_heads(get_parallel().attn_tp_size, ...)``);
  ``configs/model_config.py:1711`` ``max(1, total_num_kv_heads // kv_tensor_parallel_size)``. So on a
  full-TP model file under DP-attention (Llama-3.1-70B, TP 8, attn-DP 2) the attention shard holds
  ``8 // 8 = 1`` KV head per rank while the pool is sized for ``8 // 4 = 2``: :meth:`kv_pool_tp`.
* experts: ``moe_tp = tp / ep`` (``--ep-size``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

#: First release whose rules are the executed ones (attention-TP per model file); older releases are
#: read from source, where attention-TP is ``tp / dp`` under DP-attention for every model.
PER_FILE_SINCE = (0, 5, 21)


def _per_file(release: str | None) -> bool:
    if release is None:
        return True
    parts = []
    for p in str(release).split(".")[:3]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (3 - len(parts))) >= PER_FILE_SINCE


_ATTN_GROUP_ARCHS: list[frozenset] = []


def attn_group_archs() -> frozenset:
    """``architectures[0]`` of the model files that shard attention over the attention-TP group
    (``tp / attn_dp``) in the executed releases (from :mod:`dashboard.frameworks.sglang.rules_executed_preds`)."""
    if not _ATTN_GROUP_ARCHS:
        from dashboard.frameworks.sglang import rules_executed_preds as S  # lazy: rules are heavy (brief rule 5)

        attn = {a for mod, (group, _) in S.ATTN_ASSERTS.items() if group == "attn" for a in S.ATTN_ASSERT_ARCHS[mod]}
        attn |= set(S.MLA_DEEPSEEK) | set(S.DSV4) | {"KimiK3ForConditionalGeneration"}
        _ATTN_GROUP_ARCHS.append(frozenset(attn))
    return _ATTN_GROUP_ARCHS[0]


class SGLangSharding:
    """SGLang's sharding methods (see :class:`dashboard.frameworks.base.Framework` for the contract)."""

    replicates_kv: ClassVar[bool] = True
    reports_kv_replication: ClassVar[bool] = True
    mla_latent: ClassVar[bool] = True
    vision_split: ClassVar[str] = "pad"
    attention_dp_groups: ClassVar[bool] = True
    linear_on_attention_tp: ClassVar[bool] = True

    def kv_pool_tp(self, tp: Any, dp: Any = 1, dp_attention: Any = False, *, release: str | None = None) -> np.ndarray:
        """``get_attention_tp_size()``: ``tp // dp`` under DP-attention (``compute_dp_attention_world_info``),
        else ``tp`` -- what the KV pool is sized with for every model file (pool_configurator.py:356)."""
        t = np.asarray(tp, dtype=np.int64)
        on = np.asarray(dp_attention, dtype=bool)
        d = np.maximum(np.asarray(dp, dtype=np.int64), 1)
        return np.where(on, np.maximum(t // d, 1), t).astype(np.int64)

    def attention_tp(self, tp: Any, dp: Any = 1, dp_attention: Any = False, *, arch: Any = None,
                     release: str | None = None) -> np.ndarray:
        """Per cell: ``tp // dp`` under DP-attention for model files on the attention-TP group, the full
        ``tp`` for the others (executed releases >= 0.5.21; ``arch`` None: every file counts as on the
        attention-TP group, i.e. :meth:`kv_pool_tp`). Releases before 0.5.21: ``tp // dp`` for every file."""
        pool = self.kv_pool_tp(tp, dp, dp_attention, release=release)
        if arch is None or not _per_file(release):
            return pool
        on_attn = np.isin(np.asarray(arch, dtype=object), list(attn_group_archs()))
        return np.where(on_attn, pool, np.asarray(tp, dtype=np.int64)).astype(np.int64)

    def kv_cache_heads_per_rank(self, kv: Any, attn_tp: Any) -> np.ndarray:
        """``max(1, kv // t)`` (float64, NaN kept): ``ModelConfig.get_num_kv_heads``
        (``configs/model_config.py:1711``), what the pool is sized with -- also where ``t`` neither divides
        nor is divided by ``kv`` (a full-TP model file under DP-attention: phi-4, 10 KV heads, TP 20,
        attention-DP 5 -> pool TP 4 -> 2 heads, not ``ceil`` 3)."""
        kv_, t = np.asarray(kv, dtype=np.float64), np.asarray(attn_tp, dtype=np.float64)
        return np.where(np.isnan(kv_), np.nan, np.maximum(1.0, np.floor(kv_ / t)))

    def moe_tp(self, tp: Any, ep: Any = 1, expert_parallel: Any = False) -> np.ndarray:
        """``moe_tp_size = tp_size // ep_size`` under expert parallelism, else ``tp``."""
        t, e = np.asarray(tp, dtype=np.int64), np.asarray(ep, dtype=np.int64)
        on = np.asarray(expert_parallel, dtype=bool) | (e > 1)
        return np.where(on, np.maximum(t // np.maximum(e, 1), 1), t).astype(np.int64)

    def ep_size(self, tp: Any, dp: Any = 1, ep: Any = 1, expert_parallel: Any = False) -> np.ndarray:
        """``--ep-size`` (1 = off)."""
        e = np.asarray(ep, dtype=np.int64)
        return np.where(e > 1, e, 1).astype(np.int64) + np.zeros(np.broadcast(np.asarray(tp), e).shape, np.int64)
