"""The planner's interim ranking: most KV capacity, with near-ties settled by pipeline depth and replicas.

Throughput and latency are not modelled yet, so the ranking can only count concurrent sequences (KV-cache
capacity). Capacity alone points the wrong way on near-ties: TP 1 x PP 16 holding 379 sequences beats
TP 8 x PP 2 holding 375, though a 16-stage pipeline serves each request far more slowly. The rule:

1. Layouts that fit come first.
2. Among them, the *near-ties*: layouts holding at least ``(1 - NEAR_TIE)`` (90 %) of the top capacity.
   They are ordered by fewest pipeline stages, then most replicas (``dp``), then most sequences, then
   fewest GPUs per replica.
3. Then every other fitting layout by most sequences, fewest GPUs per replica, fewest pipeline stages.
4. Then the layouts that do not fit.

The top capacity is taken over the rows ranked together: the whole plan for the ``rank`` column, one
framework's rows for that framework's best layout (:func:`dashboard.planner.best`), one model and framework
in :func:`dashboard.planner.plan_catalog`.

Differences that come only from the frameworks' default memory fractions are reported separately
(:func:`dashboard.planner.formatting.fraction_notes`). Pure numpy, no I/O.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NEAR_TIE", "RANKING_NOTE", "best_per_group", "best_per_row", "near_ties", "rank_order"]

#: Capacity within this share of the top counts as a near-tie (0.10: within 10 %).
NEAR_TIE = 0.10

RANKING_NOTE = ("Ranked by KV capacity (concurrent sequences). Near-ties, within 10 % of the most KV capacity, "
                "prefer fewer pipeline stages, then more replicas. Latency and throughput are not modelled yet: a "
                "deep pipeline or a small TP group holds more sequences but serves each one more slowly.")


def near_ties(total, fits, top: float | None = None) -> np.ndarray:
    """Rows that fit and hold at least ``(1 - NEAR_TIE) x top`` sequences (``top``: the most any fitting
    row holds, by default). ``total``: sequences per layout; ``fits``: bool per layout."""
    total = np.asarray(total, dtype=np.float64)
    fits = np.asarray(fits, dtype=bool)
    if top is None:
        top = float(total[fits].max()) if fits.any() else 0.0
    return fits & (total > 0) & (total >= (1.0 - NEAR_TIE) * top)


def rank_order(total, pp, dp, gpus_per_replica, fits, group=None) -> np.ndarray:
    """Indices ordering the layouts by the ranking rule of this module (best first).

    ``total`` (sequences on all GPUs), ``pp`` (pipeline stages), ``dp`` (replicas), ``gpus_per_replica``,
    ``fits`` (bool): 1-D arrays, one entry per layout. ``group``: optional labels; each group's near-ties
    are measured against that group's own top capacity (the order of groups among themselves then follows
    the same keys)."""
    total = np.asarray(total, dtype=np.float64)
    pp = np.asarray(pp, dtype=np.int64)
    dp = np.asarray(dp, dtype=np.int64)
    gpr = np.asarray(gpus_per_replica, dtype=np.int64)
    fits = np.asarray(fits, dtype=bool)
    if group is None:
        band = near_ties(total, fits)
    else:
        g = np.asarray(group, dtype=object)
        band = np.zeros(len(total), dtype=bool)
        for lab in dict.fromkeys(g.tolist()):
            m = g == lab
            band[m] = near_ties(total[m], fits[m])
    pp_b = np.where(band, pp, 0)
    dp_b = np.where(band, -dp, 0)
    # np.lexsort: the last key is the primary one
    return np.lexsort((pp, gpr, -total, dp_b, pp_b, ~band, ~fits))


def best_per_group(group, fits, total, pp, dp, gpus_per_replica) -> list[int]:
    """Position of each group's best fitting row by :func:`rank_order` applied to that group's fitting rows
    alone (its near-ties measured against its own top), groups in order of their first fitting row; a group
    with no fitting row has none. ``group`` (labels, e.g. the framework), ``fits`` (bool) and the keys of
    :func:`rank_order`: 1-D arrays, one entry per row."""
    g = np.asarray(group, dtype=object)
    pos = np.flatnonzero(np.asarray(fits, dtype=bool))
    total, pp, dp, gpr = (np.asarray(a)[pos] for a in (total, pp, dp, gpus_per_replica))
    out = []
    for lab in dict.fromkeys(g[pos].tolist()):
        m = g[pos] == lab
        order = rank_order(total[m], pp[m], dp[m], gpr[m], np.ones(int(m.sum()), dtype=bool))
        out.append(int(pos[np.flatnonzero(m)[order[0]]]))
    return out


def best_per_row(total, ok, pp, dp, gpus_per_replica) -> np.ndarray:
    """For a ``(models, layouts)`` grid, the column index of each model's first layout by :func:`rank_order`
    (near-ties measured against that model's own top). ``total``, ``ok`` (the layout counts: starts):
    2-D; ``pp``, ``dp``, ``gpus_per_replica``: 1-D over layouts. A model with no ``ok`` layout gets the
    first layout by the same keys (callers mask it)."""
    total = np.asarray(total, dtype=np.float64)
    ok = np.asarray(ok, dtype=bool)
    nm, nl = total.shape
    if nm == 0 or nl == 0:
        return np.zeros(nm, dtype=np.int64)
    t = np.where(ok, total, 0.0)
    top = t.max(axis=1, keepdims=True)
    band = ok & (t > 0) & (t >= (1.0 - NEAR_TIE) * top)
    pp2 = np.broadcast_to(np.asarray(pp, dtype=np.int64)[None, :], t.shape)
    dp2 = np.broadcast_to(np.asarray(dp, dtype=np.int64)[None, :], t.shape)
    gpr = np.broadcast_to(np.asarray(gpus_per_replica, dtype=np.int64)[None, :], t.shape)
    row = np.broadcast_to(np.arange(nm)[:, None], t.shape)
    keys = [a.ravel() for a in (pp2, gpr, -t, np.where(band, -dp2, 0), np.where(band, pp2, 0), ~band, ~ok, row)]
    order = np.lexsort(keys)
    first = np.zeros(nm, dtype=np.int64)
    r = row.ravel()[order]
    starts_at = np.r_[0, np.flatnonzero(np.diff(r)) + 1]
    first[r[starts_at]] = order[starts_at] % nl
    return first
