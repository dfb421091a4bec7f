"""The (num_attention_heads, num_key_value_heads, tp) matrix run against real transformers native TP.

Each :class:`Case` is one tiny random-weight decoder (1 layer) with the given head shapes, loaded with
``from_pretrained(path, tp_plan="auto")`` under ``torchrun --nproc-per-node tp`` (gloo, CPU) and run
for one forward pass (mode ``"forward"``), or additionally driven through the continuous-batching
paged cache (mode ``"cb"``, ``generate_batch``), whose constructor raises
``Number of key value heads {kv} must be divisible by tensor parallel size {tp}.``

Every case keeps ``intermediate_size`` and ``vocab_size`` divisible by every TP size in the matrix and
by 64 (vocab), so the only thing that varies between a passing and a failing case is the head split
(except the ``dims`` group, which varies exactly those two on purpose).

``expected_ok`` is what the library did on these machines (observed, transformers 5.24.0, torch
2.13.0+cpu, accelerate 1.15.0). It is *not* what the test asserts against -- the test asserts that the
rules engine's verdict equals the library's *observed* outcome in the same run; ``expected_ok`` only
documents the observation and lets the runner's own self-check flag a library change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

#: lcm(2, 3, 4, 8) * 8 = 192: divisible by every TP size below.
INTERMEDIATE = 192
#: 64 * 6 = 384: divisible by 64 (vocab padding) and by every TP size below.
VOCAB = 384


@dataclass(frozen=True)
class Case:
    """One tiny model and one TP size.

    Attributes
    ----------
    heads, kv, tp, head_dim : int
        ``num_attention_heads``, ``num_key_value_heads``, TP size (= torchrun processes), ``head_dim``.
    group : str
        Why the case is in the matrix: ``divisible``, ``replication`` (kv < tp, kv divides tp),
        ``heads_not_divisible``, ``kv_not_divisible``, ``dims`` (head split fine, MLP/vocab uneven),
        ``cb`` (continuous-batching cache).
    expected_ok : bool
        Observed native-TP outcome on these machines (load + one forward pass OK on every rank).
    expected_cb_ok : bool or None
        Mode ``cb`` only: observed outcome of ``generate_batch`` (continuous batching, paged cache).
    arch : str
        ``llama`` or ``qwen3`` (Qwen3 adds per-head q/k RMSNorm).
    mode : str
        ``forward`` or ``cb``.
    intermediate, vocab : int
        ``intermediate_size`` and ``vocab_size`` of the tiny model.
    """

    heads: int
    kv: int
    tp: int
    group: str
    expected_ok: bool
    head_dim: int = 16
    arch: str = "llama"
    mode: str = "forward"
    intermediate: int = INTERMEDIATE
    vocab: int = VOCAB
    expected_cb_ok: bool | None = None

    @property
    def case_id(self) -> str:
        base = f"{self.arch}-h{self.heads}-kv{self.kv}-d{self.head_dim}-tp{self.tp}"
        if self.intermediate != INTERMEDIATE or self.vocab != VOCAB:
            base += f"-i{self.intermediate}-v{self.vocab}"
        return base + ("-cb" if self.mode == "cb" else "")

    @property
    def model_id(self) -> str:
        """Synthetic Hub-style id for the record given to the rules engine."""
        return f"tp-matrix/{self.case_id}"

    @property
    def hidden_size(self) -> int:
        return self.heads * self.head_dim

    def to_dict(self) -> dict:
        d = asdict(self)
        d["case_id"] = self.case_id
        return d


MATRIX: tuple[Case, ...] = (
    # ---- TP 2 ------------------------------------------------------------------------------
    Case(8, 8, 2, "divisible", True),
    Case(8, 2, 2, "divisible", True),
    Case(6, 2, 2, "divisible", True, arch="qwen3"),
    Case(8, 1, 2, "replication", False),  # MQA: one KV head cannot be split over 2 ranks
    Case(3, 3, 2, "heads_not_divisible", False),
    Case(6, 3, 2, "kv_not_divisible", False),
    Case(8, 8, 2, "dims", True, intermediate=100, vocab=1001),
    Case(8, 2, 2, "cb", True, mode="cb", expected_cb_ok=True),
    Case(8, 1, 2, "cb", False, mode="cb", expected_cb_ok=False),
    # ---- TP 3 ------------------------------------------------------------------------------
    Case(6, 3, 3, "divisible", True),
    Case(12, 4, 3, "kv_not_divisible", False),
    Case(8, 8, 3, "heads_not_divisible", False),
    Case(6, 3, 3, "dims", True, intermediate=100, vocab=1001),
    # ---- TP 4 ------------------------------------------------------------------------------
    Case(8, 4, 4, "divisible", True),  # the reference point: 4 KV heads at TP 4 run
    Case(16, 4, 4, "divisible", True, head_dim=8),
    Case(8, 8, 4, "divisible", True, arch="qwen3"),
    Case(8, 2, 4, "replication", False),
    Case(4, 1, 4, "replication", False, head_dim=8),
    Case(6, 6, 4, "heads_not_divisible", False),  # the reference point: 6 heads at TP 4 fail
    Case(12, 6, 4, "kv_not_divisible", False),
    Case(8, 4, 4, "cb", True, mode="cb", expected_cb_ok=True),
    Case(8, 2, 4, "cb", False, mode="cb", expected_cb_ok=False),
    Case(12, 6, 4, "cb", False, mode="cb", expected_cb_ok=False),
    # ---- TP 8 ------------------------------------------------------------------------------
    Case(32, 8, 8, "divisible", True),
    Case(16, 16, 8, "divisible", True, head_dim=8),
    Case(32, 4, 8, "replication", False),  # the reference point: 4 KV heads at TP 8 fail
    Case(16, 2, 8, "replication", False, arch="qwen3"),
    Case(12, 12, 8, "heads_not_divisible", False),
    Case(24, 8, 8, "dims", True, intermediate=100, vocab=1001),
)


def by_tp(cases: tuple[Case, ...] | list[Case]) -> dict[int, list[Case]]:
    """Group cases by TP size (one torchrun per TP size), TP sizes ascending."""
    out: dict[int, list[Case]] = {}
    for c in sorted(cases, key=lambda c: c.tp):
        out.setdefault(c.tp, []).append(c)
    return out
