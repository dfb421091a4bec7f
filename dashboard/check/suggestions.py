"""The nearest valid layouts: the same GPU count first, then the nearest smaller and larger TP, each
passing the rules and (with a GPU) holding the context."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dashboard import frameworks
from dashboard.launch import MAX_GPUS
from dashboard.sharding import divisors
from dashboard.check.request import Request, capacity, gpu_count


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` (>= 1), ascending, in O(sqrt n) (:func:`dashboard.sharding.divisors`)."""
    return divisors(n)


def _ok_tps(rec, req: Request, sizes: list[int], lay: dict[str, Any]) -> list[int]:
    from dashboard import rules

    if not sizes:
        return []
    kw = {k: lay[k] for k in ("pp", "dp", "ep", "dp_attention", "vision_dp", "expert_parallel")}
    from dashboard.check.judge import gpu_device_name, gpu_platform  # judged on the user's GPU, as the verdict is

    kw.update(platform=gpu_platform(req), device_name=gpu_device_name(req), kv_cache_dtype=req.kv_cache_dtype)
    try:
        ok = rules.ok_sizes(rec, req.framework, req.version, np.array(sorted(set(sizes)), dtype=np.int64), **kw)
    except (ValueError, TypeError):
        return []
    return [int(x) for x in ok]


def fits(rec, req: Request, lay: dict[str, Any], kv: str) -> bool:
    if not req.gpu:
        return True
    try:
        cap = capacity(rec, req, lay, kv)
    except (ValueError, TypeError):
        return False
    return bool(cap["fits"]) and int(cap["tokens_per_gpu"] or 0) >= int(cap["context_len"]) and \
        float(cap["weight_bytes_per_gpu"]) <= float(cap["memory_bytes"])


def _variants(rec, req: Request, base: dict[str, Any], moe: bool | None = None) -> list[dict[str, Any]]:
    """Expert-parallel / attention-DP settings to try besides the given one (MoE: EP on and off). ``moe``:
    :func:`dashboard.rules.is_moe_record` of ``rec`` when the caller has it (it builds a frame per call)."""
    from dashboard import rules

    if moe is None:
        moe = rules.is_moe_record(rec)
    mode = frameworks.get(req.framework).expert_parallel_mode
    if not moe and (base["expert_parallel"] or base["ep"] > 1):
        return [dict(base, expert_parallel=False, ep=1)]  # no experts: expert parallelism is refused
    out = [dict(base)]
    if moe:
        if mode == "flag":
            out.append(dict(base, expert_parallel=not base["expert_parallel"], ep=1))
        elif mode == "size":
            out.append(dict(base, ep=1 if base["ep"] > 1 else -1))  # -1: EP = TP, filled per TP
    return out


def alternatives(rec, req: Request, kv: str, *, limit_same: int = 3) -> list[dict[str, Any]]:
    """Nearest valid layouts: the same GPU count first (other TP/PP/DP/EP splits), then the nearest smaller
    and larger TP with the rest as given. Each must pass the rules and, with a GPU, hold the context, and
    each size stays within what the command accepts (``1 .. MAX_GPUS``), so the work is bounded by the
    divisors of the GPU count (O(sqrt N) to find, at most 13 PP sizes x 13 TP sizes for N = 4096**3),
    never by N itself."""
    from dashboard import rules

    fw = req.framework
    moe = rules.is_moe_record(rec)
    given = req.layout()
    n = gpu_count(fw, given)
    found: list[tuple[tuple, dict[str, Any], str]] = []
    seen: set[tuple] = set()

    def key(lay):
        return tuple(lay[k] for k in ("tp", "pp", "dp", "ep", "dp_attention", "expert_parallel", "vision_dp"))

    def add(lay, why, score):
        k = key(lay)
        if k in seen or k == key(given):
            return
        if not fits(rec, req, lay, kv):
            return
        seen.add(k)
        found.append((score, lay, why))

    # same GPU count
    fwo = frameworks.get(fw)
    attn_dp_in_tp = given["dp_attention"] and fwo.attention_dp_in_tp
    for pp in _divisors(n):
        if pp > MAX_GPUS:
            break
        rest = n // pp
        if attn_dp_in_tp:
            combos = [(rest, d) for d in ([rest] if fwo.attention_dp_whole_tp else _divisors(rest))]  # (tp, attn-dp)
        else:
            combos = [(t, rest // t) for t in _divisors(rest)]
        by_dp: dict[int, list[int]] = {}
        for t, d in combos:
            if t > MAX_GPUS or d > MAX_GPUS:
                continue  # a size the command would refuse
            by_dp.setdefault(d, []).append(t)
        for d, tps in by_dp.items():
            for var in _variants(rec, req, dict(given, pp=pp, dp=d), moe):
                groups: dict[int, list[int]] = {}
                for t in tps:
                    groups.setdefault(t if var["ep"] == -1 else 0, []).append(t)
                for g, ts in groups.items():
                    lay_b = dict(var)
                    if var["ep"] == -1:
                        lay_b["ep"] = g
                    for t in _ok_tps(rec, req, ts, lay_b):
                        lay = dict(lay_b, tp=t)
                        if fwo.ep_divides_tp and lay["ep"] > 1 and t % lay["ep"]:
                            continue
                        changed = sum(lay[k] != given[k] for k in ("tp", "pp", "dp", "ep", "expert_parallel"))
                        score = (0, changed, abs(math.log2(t) - math.log2(given["tp"])), lay["pp"], -t)
                        add(lay, "same_gpus", score)
    same = sorted(found, key=lambda x: x[0])[:limit_same]
    # nearest smaller / larger TP, the rest as given
    upper = min(max(64, 2 * given["tp"]), MAX_GPUS)
    base = _variants(rec, req, given, moe)[0]
    tps = _ok_tps(rec, req, list(range(1, upper + 1)), base)
    near: list[tuple[tuple, dict[str, Any], str]] = []
    for t in sorted((x for x in tps if x < given["tp"]), reverse=True):
        lay = dict(base, tp=t)
        if key(lay) not in seen and fits(rec, req, lay, kv):
            near.append(((1,), lay, "smaller_tp"))
            break
    for t in sorted(x for x in tps if x > given["tp"]):
        lay = dict(base, tp=t)
        if key(lay) not in seen and fits(rec, req, lay, kv):
            near.append(((2,), lay, "larger_tp"))
            break
    out = []
    for _, lay, why in same + near:
        out.append(dict(why=why, gpus=gpu_count(fw, lay), **lay))
    return out
