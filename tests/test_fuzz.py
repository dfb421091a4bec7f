"""Property-based fuzz tests (issue 24) of the three parsers that take untrusted text: the config
normalizer (:func:`dashboard.catalog.normalize_config`), the launch-command parser
(:func:`dashboard.launch.parse_command`) and the URL-state parser
(:meth:`dashboard.state.PlannerState.apply_query`). Random and hostile inputs may only give the documented
outcome: the normalizer never raises and always returns a record with the schema's keys (which the catalog
can always store); ``parse_command`` raises only :class:`~dashboard.launch.LaunchError`; ``apply_query``
never raises and returns notices.

CI budget: the ``issue24`` settings profile is derandomized (a fixed seed: the same inputs every run), with a
bounded number of examples per test and no per-example deadline; the whole module runs in well under 60 s.
The number of inputs tried is printed at the end (and written to tests/artifacts/fuzz-counts.json).
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard import schema
from dashboard.catalog import catalog_from_records, normalize_config
from dashboard.launch import LaunchError, parse_command

settings.register_profile("issue24", derandomize=True, deadline=None, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much])
FUZZ = settings.get_profile("issue24")
TRIED: Counter[str] = Counter()
UNEXPECTED: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _report(artifacts_dir):
    yield
    line = (f"fuzz: {sum(TRIED.values())} inputs tried ({', '.join(f'{k} {v}' for k, v in sorted(TRIED.items()))}), "
            f"{sum(UNEXPECTED.values())} unexpected exceptions")
    print("\n" + line, file=sys.__stderr__)
    (artifacts_dir / "fuzz-counts.json").write_text(json.dumps({"tried": TRIED, "unexpected": UNEXPECTED}, indent=1))


# ---- hostile atoms ------------------------------------------------------------------------------------

HOSTILE_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\ud800", "\udfff", "a\x00b", "\x1b]0;t\x07", "\u202egnp.exe", "١٢", "８", "1_6", "NaN",
                     "Infinity", "-0", "1e309", "9" * 400, "", " ", "\ufeff", "<script>", "../../etc/passwd"]),
)
NUMBERS = st.one_of(
    st.integers(), st.integers(min_value=-(2**70), max_value=2**70), st.just(2**4000), st.just(-(2**4000)),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
)
ATOMS = st.one_of(NUMBERS, HOSTILE_TEXT)

#: keys the normalizer reads (so random values hit real code paths), plus random ones
FIELD_NAMES = ["model_type", "architectures", "hidden_size", "num_attention_heads", "num_key_value_heads",
               "num_hidden_layers", "intermediate_size", "vocab_size", "head_dim", "max_position_embeddings",
               "tie_word_embeddings", "torch_dtype", "dtype", "text_config", "vision_config", "quantization_config",
               "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
               "num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
               "layer_types", "sliding_window", "hybrid_override_pattern", "block_configs", "rope_scaling",
               "thinker_config", "llm_config", "language_config", "n_shared_experts", "first_k_dense_replace",
               "quant_method", "bits", "group_size", "weight_block_size", "config_groups", "linear_num_key_heads"]
KEYS = st.one_of(st.sampled_from(FIELD_NAMES), HOSTILE_TEXT)
JSONISH = st.recursive(ATOMS, lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                        st.dictionaries(KEYS, inner, max_size=8)), max_leaves=40)

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
MUTATED = st.builds(lambda changes, drop: {**{k: v for k, v in LLAMA.items() if k not in drop}, **changes},
                    st.dictionaries(KEYS, JSONISH, max_size=5), st.sets(st.sampled_from(sorted(LLAMA)), max_size=3))


def _as_input(obj, form):
    if form == "dict":
        return obj
    try:
        text = json.dumps(obj, allow_nan=True)
    except (ValueError, TypeError, OverflowError):
        return obj
    return text if form == "str" else text.encode("utf-8", "surrogatepass")


# ---- the config normalizer ----------------------------------------------------------------------------


def _check_record(raw) -> None:
    TRIED["normalize_config"] += 1
    try:
        rec = normalize_config(raw, "fuzz/model")
        assert set(rec) == set(schema.COLUMN_NAMES)
        assert rec["status"] in schema.STATUSES
        for k, v in rec.items():
            if schema.COLUMN_DTYPES[k] == "Int64" and v is not None:
                assert isinstance(v, int) and not isinstance(v, bool), (k, v)
            if schema.COLUMN_DTYPES[k] == "float64" and v is not None:
                assert isinstance(v, (int, float)), (k, v)
        catalog_from_records([rec])  # the catalog can always store it (a bad string is quarantined)
    except AssertionError:
        raise
    except Exception:
        UNEXPECTED["normalize_config"] += 1
        raise


@settings(FUZZ, max_examples=400)
@given(cfg=st.one_of(MUTATED, JSONISH), form=st.sampled_from(["dict", "str", "bytes"]))
def test_normalizer_never_raises_and_returns_a_storable_record(cfg, form):
    _check_record(_as_input(cfg, form))


@settings(FUZZ, max_examples=150)
@given(raw=st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_normalizer_on_raw_bytes_and_text(raw):
    _check_record(raw)


# ---- the launch-command parser ------------------------------------------------------------------------

LAUNCHERS = [["vllm", "serve"], ["python", "-m", "vllm.entrypoints.openai.api_server"], ["python3", "-m", "sglang.launch_server"],
             ["sglang", "serve"], ["trtllm-serve"], ["trtllm-serve", "serve"], ["env", "A=1", "vllm", "serve"],
             ["uv", "run", "vllm", "serve"], ["CUDA_VISIBLE_DEVICES=0,1", "vllm", "serve"], []]
FLAGS = ["-tp", "--tensor-parallel-size", "--tp-size", "--tp", "-pp", "--pipeline-parallel-size", "--pp-size", "-dp",
         "--data-parallel-size", "--dp-size", "--dp", "--ep-size", "--enable-expert-parallel", "--enable-dp-attention",
         "--max-model-len", "--context-length", "--gpu-memory-utilization", "--mem-fraction-static",
         "--kv-cache-dtype", "--quantization", "--model", "--model-path", "--mm-encoder-tp-mode", "--backend",
         "--trust-remote-code", "--tensor_parallel_size", "--moe_expert_parallel_size", "--", "-", "--x=1"]
VALUES = st.one_of(HOSTILE_TEXT, st.integers(min_value=-5, max_value=10**12).map(str),
                   st.sampled_from(["8", "0", "4096", "4097", "32k", "1M", "0.9", "1.5", "nan", "auto", "fp8",
                                    "meta-llama/Llama-3.1-8B", "data"]))
TOKENS = st.lists(st.one_of(st.sampled_from(FLAGS), VALUES, st.builds(lambda f, v: f"{f}={v}", st.sampled_from(FLAGS), VALUES)),
                  max_size=14)
COMMANDS = st.one_of(
    st.builds(lambda launcher, rest: launcher + rest, st.sampled_from(LAUNCHERS), TOKENS),
    st.text(max_size=200),
    st.builds(lambda launcher, rest, sep: sep.join(launcher + rest), st.sampled_from(LAUNCHERS), TOKENS,
              st.sampled_from([" ", " \\\n  ", "\t", " '", ' "'])),
)


@settings(FUZZ, max_examples=500)
@given(cmd=COMMANDS)
def test_launch_parser_raises_only_launch_error(cmd):
    TRIED["parse_command"] += 1
    try:
        launch = parse_command(cmd)
        lay = launch.layout()
        assert all(isinstance(lay[k], int) and lay[k] >= 1 for k in ("tp", "pp", "dp")), lay
    except LaunchError as e:
        assert str(e) and "\n" not in str(e).strip()
    except AssertionError:
        raise
    except Exception:
        UNEXPECTED["parse_command"] += 1
        raise


# ---- the URL-state parser -----------------------------------------------------------------------------

URL_KEYS = ["models", "frameworks", "tp_sizes", "pp", "dp", "ep", "dp_attention", "weight_dtype", "kv_dtype", "gpu",
            "gpu_count", "context_len", "kv_measured_gib", "gpus_per_node", "min_sequences", "plan_frameworks", "model",
            "framework", "tp", "org", "model_type", "min_params_b", "max_params_b", "heads", "kv_heads", "moe", "mla",
            "linear", "vision", "quant", "tab", "add", "vllm_version", "sglang_version", "name", "_private", ""]
URL_VALUES = st.one_of(VALUES, st.sampled_from(["1", "true", "on", "H100-80GB", "other:24", "other:-1", "other:nan",
                                                "vllm,sglang", "1,2,4,8", "8,8,0", "memory", "plan", "1e400",
                                                "meta-llama/Llama-3.1-8B,a/b", "(upload)/x", "x" * 5000]))
QUERIES = st.one_of(
    st.text(max_size=300),
    st.lists(st.tuples(st.one_of(st.sampled_from(URL_KEYS), HOSTILE_TEXT), URL_VALUES), max_size=25).map(
        lambda pairs: "?" + "&".join(f"{k}={v}" for k, v in pairs)),
    st.dictionaries(st.one_of(st.sampled_from(URL_KEYS), HOSTILE_TEXT),
                    st.one_of(URL_VALUES, st.lists(URL_VALUES, max_size=3), URL_VALUES.map(
                        lambda v: v.encode("utf-8", "surrogatepass"))), max_size=12),
)


@settings(FUZZ, max_examples=300)
@given(query=QUERIES)
def test_url_state_parser_never_raises(query):
    from dashboard.state import PlannerState

    TRIED["apply_query"] += 1
    try:
        s = PlannerState()
        notices = s.apply_query(query)
        assert isinstance(notices, list) and all(isinstance(n, str) for n in notices)
        again = PlannerState()
        assert again.apply_query(s.query_string()) == []  # what it kept makes a clean link
    except AssertionError:
        raise
    except Exception:
        UNEXPECTED["apply_query"] += 1
        raise
