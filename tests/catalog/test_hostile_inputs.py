"""Careless and hostile input to the pure API and the command-line tools (a newcomer's break-it pass).

Each test is a case that once crashed, hung, ran out of memory or answered silently wrong:

* parallel sizes that are not whole numbers in 1 .. :data:`dashboard.sharding.MAX_PARALLEL` (``4.5``
  was truncated to 4 and reported valid; ``10**12`` made ``rules.check`` allocate terabytes);
* memory-model knobs outside their domain (``pp=0``, ``context_len<=0``, ``mem_fraction=2``);
* the catalog and hub CLIs with a missing folder, an unwritable / directory output, a corrupt catalog
  to merge into, or an empty folder that would replace a catalog with nothing: a one-line ``error:``
  and exit status 2, never a traceback, and the existing file untouched.

No network: the hub tests point ``HF_ENDPOINT`` at a closed 127.0.0.1 port and fail before any request.
"""

from __future__ import annotations

import json
import math
import socket

import numpy as np
import pandas as pd
import pytest

from dashboard import layout, memory, rules, sharding
from dashboard.catalog import main as catalog_main
from dashboard.hub import main as hub_main

LLAMA70 = {
    "model_id": "meta-llama/Llama-3.1-70B-Instruct",
    "model_type": "llama",
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 8192,
    "num_hidden_layers": 80,
    "intermediate_size": 28672,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}

BAD_SIZES = [0, -1, 4.5, float("nan"), float("inf"), "x", "4.5", 10**12, 2**63]


# ---------------------------------------------------------------------------------------------------
# parallel sizes
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("good, expected", [(8, 8), (np.int64(8), 8), (8.0, 8), ("8", 8), (" 16 ", 16)])
def test_parallel_size_accepts_whole_numbers(good, expected):
    assert sharding.parallel_size(good) == expected


@pytest.mark.parametrize("bad", BAD_SIZES + [True, None, [4]])
def test_parallel_size_refuses_the_rest_with_the_name(bad):
    with pytest.raises((ValueError, TypeError), match="tp"):
        sharding.parallel_size(bad, "tp")


@pytest.mark.parametrize("bad", BAD_SIZES)
def test_check_refuses_bad_tp_instead_of_truncating_or_allocating(bad):
    with pytest.raises(ValueError, match="tp"):
        rules.check(LLAMA70, "vllm", tp=bad)


def test_check_at_the_largest_size_is_quick_and_refused_with_the_framework_message():
    v = rules.check(LLAMA70, "vllm", tp=sharding.MAX_PARALLEL)
    assert not v.valid and v.failures[0].rule_id.startswith("vllm.")


@pytest.mark.parametrize("kw", [{"pp": 1.5}, {"dp": 0}, {"ep": "two"}, {"pp": 10**12}])
def test_check_refuses_bad_pp_dp_ep(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        rules.check(LLAMA70, "vllm", tp=8, **kw)


@pytest.mark.parametrize("sizes", [(4.5,), ("4",), (10**12,), (8, 0)])
def test_grid_refuses_sizes_check_refuses(sizes):
    if sizes == ("4",):  # a digit string is a whole number: same answer as 4
        g = rules.grid(pd.DataFrame([LLAMA70]), tp_sizes=sizes, frameworks=("vllm",))
        assert g["tp"].tolist() == [4]
        return
    with pytest.raises(ValueError, match="TP size"):
        rules.grid(pd.DataFrame([LLAMA70]), tp_sizes=sizes, frameworks=("vllm",))


@pytest.mark.parametrize("bad", [0, -1, 4.5, float("nan"), "x", 10**12])
def test_layout_refuses_bad_tp(bad):
    with pytest.raises(ValueError, match="tp"):
        layout.rank_layout(LLAMA70, "vllm", bad)


@pytest.mark.parametrize("bad", [0, -1, 4.5, float("nan"), "x", 0.0, -2.0, 10**12])
def test_memory_functions_refuse_bad_tp(bad):
    for fn in (memory.kv_cache_bytes_per_token_per_rank, memory.weight_bytes_per_rank):
        with pytest.raises(ValueError, match="tp"):
            fn(LLAMA70, "vllm", bad)
    with pytest.raises(ValueError, match="tp"):
        memory.capacity(LLAMA70, "vllm", "H100-80GB", bad)


@pytest.mark.parametrize("kw", [{"pp": 0}, {"pp": -3}, {"ep": 0}, {"pp": 2.5}])
def test_memory_refuses_bad_pp_ep(kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name):
        memory.weight_bytes_per_rank(LLAMA70, "vllm", 4, **kw)
    with pytest.raises(ValueError, match=name):
        memory.capacity(LLAMA70, "vllm", "H100-80GB", 4, **kw)


@pytest.mark.parametrize("ctx", [0, -5, 4.5, float("nan")])
def test_capacity_refuses_bad_context_len(ctx):
    with pytest.raises(ValueError, match="context_len"):
        memory.capacity(LLAMA70, "vllm", "H100-80GB", 4, context_len=ctx)


@pytest.mark.parametrize("frac", [0, -1, 1.5, 2.0, float("nan"), float("inf")])
def test_capacity_refuses_mem_fraction_outside_0_1(frac):
    with pytest.raises(ValueError, match="mem_fraction"):
        memory.capacity(LLAMA70, "vllm", "H100-80GB", 4, context_len=8192, mem_fraction=frac)


def test_capacity_still_answers_for_good_input():
    c = memory.capacity(LLAMA70, "vllm", "H100-80GB", 4.0, context_len=32768, mem_fraction=1.0)
    assert c["tp"] == 4 and c["fits"] and c["concurrent_sequences"] >= 1
    assert math.isfinite(c["kv_budget_bytes_per_gpu"])


# ---------------------------------------------------------------------------------------------------
# catalog CLI
# ---------------------------------------------------------------------------------------------------


def _one_config(folder):
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {k: v for k, v in LLAMA70.items() if k != "model_id"}
    (folder / "meta-llama--Llama-3.1-70B-Instruct.json").write_text(json.dumps(cfg))
    return folder


def _no_traceback(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_catalog_build_missing_folder_is_a_usage_error(tmp_path, capsys):
    assert catalog_main(["build", str(tmp_path / "nope"), "-o", str(tmp_path / "c.parquet")]) == 2
    assert "not a directory" in _no_traceback(capsys)
    assert not (tmp_path / "c.parquet").exists()


def test_catalog_build_empty_folder_does_not_replace_a_catalog_with_nothing(tmp_path, capsys):
    out = tmp_path / "c.parquet"
    assert catalog_main(["build", str(_one_config(tmp_path / "cfg")), "-o", str(out)]) == 0
    before = out.read_bytes()
    (tmp_path / "empty").mkdir()
    assert catalog_main(["build", str(tmp_path / "empty"), "-o", str(out)]) == 2
    assert "no <org>--<name>.json" in _no_traceback(capsys)
    assert out.read_bytes() == before


@pytest.mark.parametrize("where", ["missing_parent", "is_dir"])
def test_catalog_build_unwritable_output_is_a_clear_error(tmp_path, capsys, where):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = blocker / "sub" / "c.parquet" if where == "missing_parent" else tmp_path
    assert catalog_main(["build", str(_one_config(tmp_path / "cfg")), "-o", str(out)]) == 2
    assert "cannot write" in _no_traceback(capsys)


def test_catalog_build_merge_into_a_corrupt_catalog_keeps_it(tmp_path, capsys):
    out = tmp_path / "c.parquet"
    out.write_bytes(b"not a parquet file")
    assert catalog_main(["build", str(_one_config(tmp_path / "cfg")), "-o", str(out), "--merge"]) == 2
    assert "cannot be read" in _no_traceback(capsys)
    assert out.read_bytes() == b"not a parquet file"


# ---------------------------------------------------------------------------------------------------
# hub CLI (no request is ever made: every case fails before the first one)
# ---------------------------------------------------------------------------------------------------


@pytest.fixture
def closed_endpoint(monkeypatch, tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return port


@pytest.mark.parametrize("where", ["missing_parent", "is_dir"])
def test_hub_scrape_unwritable_catalog_is_a_clear_error(tmp_path, capsys, closed_endpoint, where):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cat = blocker / "sub" / "c.parquet" if where == "missing_parent" else tmp_path
    rc = hub_main(["scrape", "a/b", "--catalog", str(cat), "--max-retries", "0", "--no-progress"])
    assert rc == 2
    assert "error:" in _no_traceback(capsys)


@pytest.mark.parametrize("args", [["--timeout", "-1"], ["--timeout", "0"], ["--timeout", "nan"],
                                  ["--max-retries", "-1"]])
def test_hub_scrape_bad_numbers_are_usage_errors(tmp_path, capsys, closed_endpoint, args):
    cat = tmp_path / "c.parquet"
    rc = hub_main(["scrape", "a/b", "--catalog", str(cat), "--no-progress", *args])
    assert rc == 2
    assert args[0] in _no_traceback(capsys)
    assert not cat.exists()


# ---------------------------------------------------------------------------------------------------
# catalog files and records
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", 2**70, [1, 2]])
def test_catalog_from_records_names_the_column_it_cannot_store(value):
    from dashboard.catalog import catalog_from_records

    with pytest.raises(ValueError, match="num_attention_heads"):
        catalog_from_records([{"model_id": "x/y", "num_attention_heads": value}])


def test_load_catalog_of_a_foreign_parquet_names_the_column(tmp_path):
    from dashboard.catalog import load_catalog

    p = tmp_path / "edited.parquet"
    pd.DataFrame({"model_id": ["x/y"], "num_key_value_heads": ["eight"]}).to_parquet(p)
    with pytest.raises(ValueError, match="num_key_value_heads"):
        load_catalog(p)


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_load_catalog_missing_file_says_so(tmp_path, kind):
    from dashboard.catalog import load_catalog

    p = tmp_path / "nope.parquet"
    if kind == "directory":
        p.mkdir()
    with pytest.raises(FileNotFoundError, match="no catalog file at"):
        load_catalog(p)
