"""The GPU table (``data/gpus.csv``) and the hardware dtype rules: which card runs which dtype natively.

One home for GPU facts. A new card is a row in ``data/gpus.csv`` (``compute_capability`` says what it runs);
a new chip family (a new NVIDIA capability threshold, a new AMD LLVM target) touches this module only:
:data:`DTYPE_MIN_CAPABILITY`, :data:`AMD_DTYPES`, :data:`DTYPE_NEEDS`. What a framework does about a dtype
the GPU lacks (vLLM's ``--dtype auto`` fallback and its own message) lives in that framework's package
(``Framework.dtype_refusal``).

Units: ``memory_bytes`` bytes per GPU (``GiB`` = 2**30). Pure except :func:`load_gpus` (reads the CSV once,
cached). Sources: NVIDIA CUDA compute capabilities (https://developer.nvidia.com/cuda-gpus); bf16 needs SM 8.0
(Ampere), FP8 SM 8.9 (Ada / Hopper), NVFP4 SM 10.0 (Blackwell); AMD ROCm precision support by LLVM target
(https://rocm.docs.amd.com/en/latest/reference/precision-support.html).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

MiB = 1 << 20

#: The GPU table shipped with the product.
GPUS_CSV = Path(__file__).resolve().parents[1] / "data" / "gpus.csv"


@lru_cache(maxsize=1)
def _gpus_cached(path: str) -> pd.DataFrame:
    strings = ("gpu", "name", "vendor", "memory_figure", "source_url", "memory_source", "compute_capability",
               "platform", "form_factor", "platform_source")
    df = pd.read_csv(path, dtype={c: "string" for c in strings})
    df["memory_bytes"] = df["memory_bytes"].astype("int64")
    if "gpus_per_node" in df.columns:
        df["gpus_per_node"] = df["gpus_per_node"].astype("Int64")
    if "mem_get_info_gib" in df.columns:
        df["mem_get_info_gib"] = pd.to_numeric(df["mem_get_info_gib"], errors="coerce").astype("float64")
    return df


def load_gpus(path: str | Path | None = None) -> pd.DataFrame:
    """The GPU table ``data/gpus.csv``: one row per GPU (32 cards; sources and date in ``data/README.md``).

    Columns: ``gpu`` (id used everywhere, e.g. ``H100-80GB``), ``name`` (as the driver names it),
    ``vendor``, ``memory_bytes`` (total device memory in bytes, the figure the engines size against:
    ``nvidia-smi memory.total`` MiB x 2^20 = NVML total; ``rocm-smi`` VRAM Total for AMD; or a spec-sheet
    figure, see ``memory_figure``), ``memory_mib``, ``memory_gib``, ``memory_figure`` (where the figure
    comes from: ``nvidia-smi`` / ``torch`` / ``rocm-smi`` -- a driver figure -- or ``spec-sheet``: the
    vendor's decimal GB rounded down to whole MiB, a lower bound 2-7 % below what drivers report where both
    are known), ``source_url`` (public page showing the figure), ``memory_source`` (the figure in words),
    ``mem_get_info_gib`` (float, GiB: ``cudaMemGetInfo`` total where a public log shows it, else NaN),
    ``compute_capability`` (string: NVIDIA CUDA compute capability ``"major.minor"`` such as ``"9.0"``, or
    the AMD LLVM target such as ``"gfx942"``), ``platform`` (the platform id the conformance tables are keyed
    by, :data:`PLATFORMS`: ``cuda-sm80`` for capability 8.0 and 8.6, ``rocm-gfx942``, ...), ``gpus_per_node`` (Int64: GPUs in one node of the usual
    platform -- 8 on an HGX board, 72 in an NVL72 rack, 4 or 8 in a PCIe server), ``form_factor`` (that
    platform in words), ``platform_source`` (where the capability and GPU count come from).
    Returns a copy (the cached table stays read-only). A card not in the table is given by its memory:
    see :func:`gpu_row` (``"other:24"``).
    """
    return _gpus_cached(str(path or GPUS_CSV)).copy()


#: Prefix of a GPU given by its memory alone: ``"other:24"`` is a card with 24 GiB per GPU.
OTHER_PREFIX = "other:"
#: Accepted memory range of an ``other:`` GPU, GiB per GPU.
OTHER_GIB_RANGE = (1.0, 4096.0)


def other_gpu(gib: float) -> str:
    """The canonical id of a GPU given by its memory: ``other_gpu(24)`` -> ``"other:24"`` (GiB per GPU,
    up to three decimals). Raises ``ValueError`` outside :data:`OTHER_GIB_RANGE`."""
    try:
        v = float(gib)
    except (TypeError, ValueError):
        raise ValueError(f"GPU memory must be a number of GiB, got {gib!r}") from None
    lo, hi = OTHER_GIB_RANGE
    if not math.isfinite(v) or not lo <= v <= hi:
        raise ValueError(f"GPU memory must be {lo:g} to {hi:g} GiB per GPU, got {gib!r}")
    return f"{OTHER_PREFIX}{round(v, 3):g}"


def parse_other_gpu(text: Any) -> float | None:
    """GiB per GPU of an ``"other:<GiB>"`` id (case-insensitive, spaces ignored), ``None`` when ``text`` does
    not start with ``other:``. Raises ``ValueError`` with the expected spelling when the number is missing,
    not a number or outside :data:`OTHER_GIB_RANGE`."""
    if not isinstance(text, str):
        return None
    t = text.strip().lower().replace(" ", "")
    if not t.startswith(OTHER_PREFIX):
        return None
    num = t[len(OTHER_PREFIX):]
    lo, hi = OTHER_GIB_RANGE
    hint = (f"after 'other:' give the memory per GPU in GiB, a number from {lo:g} to {hi:g} "
            "(e.g. other:24 for a 24 GiB card)")
    try:
        v = float(num)
    except ValueError:
        raise ValueError(f"GPU {text.strip()[:40]!r}: {hint}") from None
    if not math.isfinite(v) or not lo <= v <= hi:
        raise ValueError(f"GPU {text.strip()[:40]!r}: {hint}")
    return v


def gpu_row(gpu: Any) -> dict:
    """The GPU table row of ``gpu`` as a dict, for a table id (case-insensitive, e.g. ``"h100-80gb"``) or
    ``"other:<GiB>"`` (a card given by its memory: ``memory_bytes`` = GiB x 2^30 rounded down to whole
    MiB, ``compute_capability`` empty -- unknown, so no dtype is refused --, ``gpus_per_node`` ``None``,
    ``memory_figure`` ``"user"``). Raises ``ValueError`` naming the known ids (and the ``other:`` spelling)
    for anything else."""
    gib = parse_other_gpu(gpu)
    if gib is not None:
        gid = other_gpu(gib)
        mib = int(gib * 1024)
        return {"gpu": gid, "name": f"Other GPU ({gib:g} GiB)", "vendor": "", "memory_bytes": mib * MiB,
                "memory_mib": mib, "memory_gib": mib / 1024, "memory_figure": "user", "source_url": "",
                "memory_source": "given by the user", "mem_get_info_gib": float("nan"), "compute_capability": "",
                "platform": "", "gpus_per_node": None, "form_factor": "", "platform_source": ""}
    rows = _gpu_rows(str(GPUS_CSV))
    hit = rows.get(str(gpu).strip().lower())
    if hit is None:
        known = ", ".join(r["gpu"] for r in rows.values())
        near = suggest_gpus(gpu)
        dym = f" (did you mean {' or '.join(near)}?)" if near else ""
        raise ValueError(f"unknown GPU {str(gpu)[:60]!r}{dym}; known: {known}; or other:<GiB> "
                         "for a card given by its memory (e.g. other:24)")
    return dict(hit)


def suggest_gpus(text: Any, n: int = 3) -> list[str]:
    """GPU table ids close to ``text`` (case-insensitive): the ids it starts (``H200`` -> ``H200-141GB``;
    ``H100`` -> every H100 id), else the nearest by :func:`difflib.get_close_matches` (cutoff 0.6); at most
    ``n``, in table order for prefixes."""
    import difflib

    rows = _gpu_rows(str(GPUS_CSV))
    q = str(text).strip().lower()[:60]
    if not q:
        return []
    ids = [r["gpu"] for r in rows.values()]
    pre = [g for g in ids if g.lower().startswith(q) or g.lower().split("-")[0] == q]
    if pre:
        return pre[:n]
    low = {g.lower(): g for g in ids}
    return [low[m] for m in difflib.get_close_matches(q, list(low), n=n, cutoff=0.6)]


@lru_cache(maxsize=1)
def _gpu_rows(path: str) -> dict[str, dict]:
    """The GPU table's rows as dicts by lower-cased id, in table order (built once; callers copy)."""
    return {str(r["gpu"]).lower(): r for r in _gpus_cached(path).to_dict("records")}


def resolve_gpu_id(gpu: Any) -> str:
    """The canonical spelling of a GPU id (``"h100-80GB"`` -> ``"H100-80GB"``, ``"Other: 24.0"`` ->
    ``"other:24"``). Raises ``ValueError`` as :func:`gpu_row`."""
    return str(gpu_row(gpu)["gpu"])


def gpu_memory(gpu: Any) -> tuple[str, int]:
    """``(GPU id, memory bytes per GPU)`` of a GPU id / ``"other:<GiB>"`` (:func:`gpu_row`), a table row
    (mapping or Series with ``gpu`` and ``memory_bytes``) or a number of bytes (id ``"<n> B"``). Raises
    ``ValueError`` as :func:`gpu_row`."""
    if isinstance(gpu, (int, np.integer)):
        return f"{int(gpu)} B", int(gpu)
    if isinstance(gpu, (pd.Series, Mapping)):
        return str(gpu["gpu"]), int(gpu["memory_bytes"])
    row = gpu_row(gpu)
    return str(row["gpu"]), int(row["memory_bytes"])



# --------------------------------------------------------------------------------------------
# Platforms: the GPU families the conformance harness stands in for
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Platform:
    """One GPU family as the serving engines tell them apart (kernel and attention-backend selection read
    the compute capability or the AMD LLVM target, nothing finer). ``stand_in`` is the card of
    ``data/gpus.csv`` whose device answers (name, capability, memory) the conformance harness gives for
    the whole family; ``capability`` is what ``get_device_capability()`` returns there (an AMD target's
    too: ROCm's torch reports gfx942 as 9.4 and gfx950 as 9.5), ``arch`` the AMD ``gcnArchName``,
    ``compute_units`` the stand-in card's streaming multiprocessors (NVIDIA) or compute units (AMD), what
    ``torch.cuda.get_device_properties().multi_processor_count`` reports there (FlashInfer sizes buffers by
    it at construction). Sources: NVIDIA's architecture whitepapers and datasheets (T4 40 SMs, A100 108,
    L40S 142, H100 SXM5 132, B200 148, RTX 5090 170); AMD's Instinct data sheets (MI300X 304 CUs, MI355X 256,
    MI250X 220 for two GCDs, 110 per GCD)."""

    id: str
    label: str
    vendor: str
    capability: tuple[int, int]
    stand_in: str
    arch: str = ""
    compute_units: int = 0

    @property
    def is_rocm(self) -> bool:
        return self.vendor == "amd"


#: Every platform id of ``data/gpus.csv``'s ``platform`` column, in capability order. The first eight are
#: the ones issue 23 executes; ``rocm-gfx90a`` (MI250X) is known but never run (its answers are read
#: from source). Capabilities: NVIDIA's CUDA GPUs table (https://developer.nvidia.com/cuda-gpus); AMD
#: ``torch.cuda.get_device_capability()`` on ROCm (gfx90a 9.0, gfx942 9.4, gfx950 9.5).
PLATFORMS: dict[str, Platform] = {p.id: p for p in (
    Platform("cuda-sm75", "Turing (SM 7.5: T4)", "nvidia", (7, 5), "T4-16GB", compute_units=40),
    Platform("cuda-sm80", "Ampere (SM 8.0/8.6: A100, A10, A6000, RTX 3090)", "nvidia", (8, 0), "A100-80GB",
             compute_units=108),
    Platform("cuda-sm89", "Ada (SM 8.9: L4, L40S, RTX 4090)", "nvidia", (8, 9), "L40S-48GB", compute_units=142),
    Platform("cuda-sm90", "Hopper (SM 9.0: H100, H200, H20, GH200)", "nvidia", (9, 0), "H100-80GB",
             compute_units=132),
    Platform("cuda-sm100", "Blackwell (SM 10.0/10.3: B200, GB200, B300)", "nvidia", (10, 0), "B200-180GB",
             compute_units=148),
    Platform("cuda-sm120", "Blackwell RTX (SM 12.0: RTX 5090, RTX PRO 6000)", "nvidia", (12, 0), "RTX-5090-32GB",
             compute_units=170),
    Platform("rocm-gfx942", "CDNA 3 (gfx942: MI300X, MI325X)", "amd", (9, 4), "MI300X-192GB", "gfx942", 304),
    Platform("rocm-gfx950", "CDNA 4 (gfx950: MI355X)", "amd", (9, 5), "MI355X-288GB", "gfx950", 256),
    Platform("rocm-gfx90a", "CDNA 2 (gfx90a: MI250X)", "amd", (9, 0), "MI250X-64GB", "gfx90a", 110),
)}

#: The platform the first conformance tables were built on, and the heatmap's default GPU's.
DEFAULT_PLATFORM = "cuda-sm90"
#: The platform of a card given by its memory only (``other:<GiB>``): its family is unknown, so its verdicts are
#: judged as on :data:`DEFAULT_PLATFORM` and are never executed evidence for it.
UNKNOWN_PLATFORM = "unknown"


def platform_of(gpu: Any) -> str | None:
    """The platform id of a GPU id (``"A10-24GB"`` -> ``"cuda-sm80"``), a table row, or ``None`` for a card
    given by its memory (``"other:24"``: its family is unknown). Raises ``ValueError`` as :func:`gpu_row`."""
    row = dict(gpu) if isinstance(gpu, (Mapping, pd.Series)) else gpu_row(gpu)
    p = row.get("platform")
    return None if p is None or (isinstance(p, float) and math.isnan(p)) or not str(p) or pd.isna(p) else str(p)


def evidence_platform(gpu: Any) -> str | None:
    """The platform a verdict's evidence is about for ``gpu``: :func:`platform_of`, or
    :data:`UNKNOWN_PLATFORM` for a card given by its memory (``other:<GiB>``); None without a GPU. Raises
    ``ValueError`` as :func:`gpu_row`."""
    if gpu is None or gpu == "":
        return None
    return platform_of(gpu) or UNKNOWN_PLATFORM


def judged_on(gpu: Any) -> dict[str, str | None]:
    """The keyword arguments that judge the rules on ``gpu`` (``platform`` / ``device_name`` of
    :func:`dashboard.rules.check`, ``grid``, ``layout_grid``): :func:`evidence_platform` and the name the card
    reports (``name``: "NVIDIA A10"; None for a card given by its memory). Both None without a GPU, or for an id
    the GPU table does not know (the caller reports that)."""
    try:
        pid = evidence_platform(gpu)
        name = str(gpu_row(gpu)["name"]) or None if pid not in (None, UNKNOWN_PLATFORM) else None
    except ValueError:
        return {"platform": None, "device_name": None}
    return {"platform": pid, "device_name": name}


def platform(pid: str) -> Platform:
    """The :class:`Platform` of an id; ``ValueError`` naming the known ids otherwise."""
    try:
        return PLATFORMS[pid]
    except KeyError:
        raise ValueError(f"unknown platform {str(pid)[:40]!r}; known: {', '.join(PLATFORMS)}") from None


# --------------------------------------------------------------------------------------------
# Hardware dtype rules
# --------------------------------------------------------------------------------------------
#: Minimum compute capability for a dtype to run natively (NVIDIA ``major.minor``).
DTYPE_MIN_CAPABILITY: dict[str, float] = {"bf16": 8.0, "fp8": 8.9, "nvfp4": 10.0}

#: AMD LLVM targets and the dtypes they run natively (gfx942 = MI300X / MI325X, gfx950 = MI355X).
AMD_DTYPES: dict[str, frozenset[str]] = {
    "gfx90a": frozenset({"bf16"}),
    "gfx942": frozenset({"bf16", "fp8"}),
    "gfx950": frozenset({"bf16", "fp8"}),
}

#: What each checked dtype needs, in words (the refusal names it).
DTYPE_NEEDS: dict[str, str] = {"bf16": "compute capability 8.0 (Ampere)", "fp8": "compute capability 8.9 (Ada / Hopper)",
                               "nvfp4": "compute capability 10.0 (Blackwell)"}


@dataclass(frozen=True)
class GPU:
    """One row of ``data/gpus.csv`` the planner needs (see :func:`load_gpus`)."""

    gpu: str
    name: str
    vendor: str
    memory_bytes: int
    compute_capability: str
    gpus_per_node: int | None

    def runs(self, dtype: str) -> bool | None:
        """Whether the GPU runs ``dtype`` (bf16 / fp8 / nvfp4) natively; None when the table does not say."""
        cc = (self.compute_capability or "").strip().lower()
        if not cc:
            return None
        if cc.startswith("gfx"):
            return dtype in AMD_DTYPES.get(cc, frozenset())
        try:
            v = float(cc)
        except ValueError:
            return None
        return v >= DTYPE_MIN_CAPABILITY[dtype]

    @property
    def is_amd_target(self) -> bool:
        """The capability is an AMD LLVM target (``gfx...``), not a CUDA ``major.minor``."""
        return (self.compute_capability or "").startswith("gfx")


_GPU_CACHE: dict[tuple, GPU] = {}


def gpu_info(gpu_type: str | Mapping) -> GPU:
    """The GPU table row of ``gpu_type`` (id, case-insensitive, e.g. ``"H100-80GB"``, or ``"other:<GiB>"``;
    or a row mapping / Series) as a :class:`GPU`.

    Raises ``ValueError`` naming the known ids for an unknown GPU."""
    if isinstance(gpu_type, str):
        key = (str(GPUS_CSV), gpu_type.strip().lower())
        hit = _GPU_CACHE.get(key)
        if hit is None:
            hit = gpu_from_row(gpu_type)
            _GPU_CACHE[key] = hit
        return hit
    return gpu_from_row(gpu_type)


def gpu_from_row(gpu_type: str | Mapping) -> GPU:
    """:func:`gpu_info` without the cache: a row mapping / Series, or an id read with :func:`gpu_row`."""
    if isinstance(gpu_type, Mapping) or isinstance(gpu_type, pd.Series):
        row = dict(gpu_type)
    else:
        row = gpu_row(gpu_type)  # a table id or "other:<GiB>"; ValueError naming both otherwise
    gpn = row.get("gpus_per_node")
    gpn = None if gpn is None or pd.isna(gpn) else int(gpn)
    cc = row.get("compute_capability")
    return GPU(str(row["gpu"]), str(row.get("name", row["gpu"])), str(row.get("vendor", "")),
               int(row["memory_bytes"]), "" if cc is None or pd.isna(cc) else str(cc), gpn)


def dtype_check_note(gpu: GPU) -> str:
    """'' when the GPU table gives ``gpu``'s compute capability; else the note that the dtype check was
    skipped (a card given by its memory, ``"other:<GiB>"``, has no known capability: nothing is refused)."""
    cc = (gpu.compute_capability or "").strip().lower()
    known = cc.startswith("gfx") and cc in AMD_DTYPES
    if not known and not cc.startswith("gfx"):
        try:
            float(cc)
            known = True
        except ValueError:
            known = False
    if known:
        return ""
    return (f"dtype check skipped: the compute capability of {gpu.gpu} is unknown, so bf16 / FP8 / NVFP4 support "
            "was not checked (nothing refused for its dtype).")


def cc_below(gpu: GPU, major_minor: float) -> bool:
    """The GPU's CUDA compute capability is below ``major_minor`` (e.g. 8.0); False for AMD targets and unknown
    capabilities (nothing to compare)."""
    cc = (gpu.compute_capability or "").strip()
    try:
        return float(cc) < major_minor
    except ValueError:  # AMD (gfx...) or unknown: no CUDA capability to compare
        return False


def lacks_bf16(gpu: GPU) -> bool:
    """A CUDA GPU below compute capability 8.0 (Pascal to Turing): no native bfloat16."""
    return cc_below(gpu, DTYPE_MIN_CAPABILITY["bf16"])


def kv_dtype_kind(kv_dtype: str) -> str:
    """The checked dtype a KV-cache dtype needs: ``"fp8"`` (any ``fp8*``), ``"bf16"``, or ``""`` (unchecked)."""
    kv = str(kv_dtype).lower()
    return "fp8" if kv.startswith("fp8") else ("bf16" if kv in ("bf16", "bfloat16") else "")


def dtype_needs(weight_kind: str, kv_dtype: str) -> list[tuple[str, str]]:
    """The ``(dtype, what)`` pairs a deployment needs natively: the weights' kind when it is bf16 / fp8 / nvfp4,
    then the KV cache's (:func:`kv_dtype_kind`)."""
    needs: list[tuple[str, str]] = []
    if weight_kind in ("bf16", "fp8", "nvfp4"):
        needs.append((weight_kind, "weights"))
    kv_kind = kv_dtype_kind(kv_dtype)
    if kv_kind:
        needs.append((kv_kind, "KV cache"))
    return needs


def first_unsupported(gpu: GPU, needs: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The first of ``needs`` the GPU cannot run natively, or None (also when the table does not say)."""
    for dtype, what in needs:
        ok = gpu.runs(dtype)
        if ok is None or ok:
            continue
        return dtype, what
    return None


def dtype_refusal_message(gpu: GPU, dtype: str, what: str) -> str:
    """The planner's own refusal for ``dtype`` (``what``: "weights" / "KV cache") on ``gpu``."""
    cc = gpu.compute_capability or "unknown"
    arch = f"LLVM target {cc}" if cc.startswith("gfx") else f"compute capability {cc}"
    return (f"{gpu.name} ({arch}) cannot run {dtype.upper()} {what} natively: {dtype.upper()} needs "
            f"{DTYPE_NEEDS[dtype]} (planner rule from the GPU table, not the framework's message).")


def dtype_refusal(gpu: GPU, weight_kind: str, kv_dtype: str) -> str:
    """The refusal for a weight / KV dtype the GPU cannot run natively ('' when it can or the table does not
    say), for a framework that loads what it is given (no dtype fallback of its own)."""
    hit = first_unsupported(gpu, dtype_needs(weight_kind, kv_dtype))
    return "" if hit is None else dtype_refusal_message(gpu, *hit)


def cuda_capability(gpu: GPU) -> float | None:
    """The CUDA compute capability of an NVIDIA GPU as a number (``8.6``), None for AMD targets and
    unknown capabilities (a card given by its memory)."""
    cc = (gpu.compute_capability or "").strip()
    if not cc or cc.lower().startswith("gfx"):
        return None
    try:
        return float(cc)
    except ValueError:
        return None


def amd_target(gpu: GPU) -> str:
    """The AMD LLVM target of an AMD GPU (``"gfx942"``), '' otherwise."""
    cc = (gpu.compute_capability or "").strip().lower()
    return cc if cc.startswith("gfx") else ""


def platform_refusal(gpu: GPU, *, label: str, cuda_min: float | None, rocm_targets: frozenset[str] | None,
                     source: str, cuda_min_source: str = "") -> str:
    """The refusal of a framework named ``label`` on ``gpu`` from its supported-hardware facts ('' when it
    runs there or the GPU's family is unknown): ``cuda_min`` the lowest CUDA compute capability it runs on
    (None: any), ``rocm_targets`` the AMD LLVM targets it builds for (None: any; empty: NVIDIA only). The
    message is ours and names ``source`` (and, for a card below ``cuda_min``, ``cuda_min_source`` too: where
    the minimum itself is stated)."""
    tgt, cc = amd_target(gpu), cuda_capability(gpu)
    if tgt and rocm_targets is not None and tgt not in rocm_targets:
        if not rocm_targets:
            return (f"{label} runs on NVIDIA GPUs only (CUDA); {gpu.name} is an AMD GPU (LLVM target {tgt}), "
                    f"so {label} does not run on it (message ours; {source}).")
        return (f"{label} is built for AMD targets {', '.join(sorted(rocm_targets))}, not {tgt} ({gpu.name}) "
                f"(message ours; {source}).")
    if cc is not None and cuda_min is not None and cc < cuda_min:
        why = f"{source}; {cuda_min_source}" if cuda_min_source else source
        return (f"{label} needs compute capability {cuda_min:.1f} or newer; {gpu.name} has {cc:.1f} "
                f"(message ours; {why}).")
    return ""
