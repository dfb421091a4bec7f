"""``tp-planner check``: verdicts and exit statuses for every model source and layout form (issue 13).

The Hub cases run the real command in a subprocess against the local Hub-compatible server
(``tests/hubserver.py``), so ``HF_ENDPOINT`` / ``HF_HOME`` / ``HF_HUB_OFFLINE`` are read from the
environment as huggingface_hub reads them; the rest call :func:`dashboard.check.main` in-process.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard import check as chk
from dashboard.launch import LaunchError, parse_command

try:
    from tests.hubserver import FakeHub
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from hubserver import FakeHub

ROOT = Path(__file__).resolve().parents[1]
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"

#: meta-llama/Llama-3.1-70B-Instruct's config.json (verbatim, as the Hub serves it)
LLAMA_70B_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu", "hidden_size": 8192,
    "initializer_range": 0.02, "intermediate_size": 28672, "max_position_embeddings": 131072, "mlp_bias": False,
    "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.42.3",
    "use_cache": True, "vocab_size": 128256,
}
#: Qwen/Qwen3-30B-A3B's config.json (an MoE: 128 experts)
QWEN3_MOE_CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144, "max_position_embeddings": 40960,
    "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768,
    "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8,
    "num_hidden_layers": 48, "num_key_value_heads": 4, "output_router_logits": False, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": None,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936,
}
HEADS_MSG = "Total number of attention heads (64) must be divisible by tensor parallel size (6)."


def run(*argv: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = chk.main(list(argv), stdin=io.BytesIO(stdin if stdin is not None else b""), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def run_json(*argv: str, stdin: bytes | None = None) -> tuple[int, dict]:
    rc, out, err = run(*argv, "--json", stdin=stdin) if "--" not in argv else run(
        *argv[: argv.index("--")], "--json", *argv[argv.index("--"):], stdin=stdin)
    doc = json.loads(out)
    assert doc["schema_version"] == chk.SCHEMA_VERSION and doc["exit_status"] == rc
    return rc, doc


def _model_dir(parent: Path, name: str, config: dict) -> Path:
    """A local model folder ``parent/name`` holding ``config.json``."""
    d = parent / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    return d


@pytest.fixture
def llama_dir(tmp_path: Path) -> Path:
    return _model_dir(tmp_path, "Llama-3.1-70B-Instruct", LLAMA_70B_CONFIG)


@pytest.fixture
def qwen_dir(tmp_path: Path) -> Path:
    return _model_dir(tmp_path, "Qwen3-30B-A3B", QWEN3_MOE_CONFIG)


# ------------------------------------------------------------------------------------------------
# the Hub (subprocess, local Hub server)
# ------------------------------------------------------------------------------------------------


def _env(hub_url: str, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE_"))}
    env.update(HF_ENDPOINT=hub_url, HF_HOME=str(home), HF_HUB_DISABLE_TELEMETRY="1",
               PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
    env.update(extra)
    return env


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dashboard.cli", "check", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=180)


def test_hub_id_tp6_refused_with_vllms_message_then_offline_from_the_cache(tmp_path):
    with FakeHub() as hub:
        hub.add(LLAMA_70B, LLAMA_70B_CONFIG)
        hub.add("TheBloke/Llama-2-7B-GPTQ", {**LLAMA_70B_CONFIG, "num_hidden_layers": 4},
                files={"quantize_config.json": json.dumps({"bits": 4, "group_size": 128}).encode()})
        home = tmp_path / "hf-home"
        # a catalog model: the shipped catalog answers, the Hub is not asked
        r = _cli(LLAMA_70B, "--framework", "vllm", "--tp", "6", env=_env(hub.url, home))
        assert r.returncode == 1, r.stderr
        assert "  config: shipped catalog, snapshot of 2026-12-01" in r.stdout and hub.count() == 0
        # --refresh: the Hub's current config, through huggingface_hub's cache
        r = _cli(LLAMA_70B, "--framework", "vllm", "--tp", "6", "--refresh", env=_env(hub.url, home))
        assert r.returncode == 1, r.stderr
        assert "  config: hub @ " in r.stdout and hub.count() > 0
        assert "note: the Hub's current config is the shipped catalog's (snapshot of 2026-12-01)" in r.stdout
        assert r.stdout.startswith(f"REFUSED: {LLAMA_70B} on vLLM 0.33.0, tp=6")
        assert f"1. ValueError: {HEADS_MSG}" in r.stdout
        assert "at vllm/config/model.py:1560 https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/model.py#L1560" in r.stdout
        assert f"same 6 GPUs: vllm serve {LLAMA_70B} --tensor-parallel-size 2" in r.stdout
        assert f"smaller TP (4 GPUs): vllm serve {LLAMA_70B} --tensor-parallel-size 4" in r.stdout
        assert f"larger TP (8 GPUs): vllm serve {LLAMA_70B} --tensor-parallel-size 8" in r.stdout
        assert "Traceback" not in r.stderr
        # the config went through huggingface_hub's cache under HF_HOME
        assert list((home / "hub").glob("models--meta-llama--Llama-3.1-70B-Instruct/snapshots/*/config.json"))
        # a repo's quantization sidecar is read too
        r = _cli("TheBloke/Llama-2-7B-GPTQ", "--tp", "8", "--json", env=_env(hub.url, home))
        doc = json.loads(r.stdout)
        assert doc["model"]["sidecars"] == ["quantize_config.json"]
        # offline: the cached config answers, no request is made
        hub.reset_counts()
        r = _cli(LLAMA_70B, "--framework", "vllm", "--tp", "8", "--json", "--refresh",
                 env=_env(hub.url, home, HF_HUB_OFFLINE="1"))
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["verdict"] == "accepted" and doc["model"]["offline"] is True and doc["model"]["sha"]
        assert hub.count() == 0
        # a gated repo: exit 2 naming HF_TOKEN; with a granted HF_TOKEN it is read, and the token never printed
        hub.add("acme/gated", LLAMA_70B_CONFIG, gated=True)
        r = _cli("acme/gated", "--tp", "8", env=_env(hub.url, home))
        assert r.returncode == 2 and "gated" in r.stderr and "HF_TOKEN" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        hub.granted_tokens.add("hf_secretsecret123")
        r = _cli("acme/gated", "--tp", "8", "--json", env=_env(hub.url, home, HF_TOKEN="hf_secretsecret123"))
        assert r.returncode == 0 and json.loads(r.stdout)["verdict"] == "accepted"
        assert "hf_secret" not in r.stdout + r.stderr


def test_offline_hub_id_not_in_the_cache_is_exit_2_with_one_line(tmp_path):
    env = _env("http://127.0.0.1:9", tmp_path / "empty-hf-home", HF_HUB_OFFLINE="1")
    r = _cli("meta-llama/Llama-3.1-70B-Instruct", "--framework", "vllm", "--tp", "6", "--refresh", env=env)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "offline (HF_HUB_OFFLINE is set)" in lines[0] and "not in the Hugging Face cache" in lines[0]


# ------------------------------------------------------------------------------------------------
# local folder, config.json, stdin
# ------------------------------------------------------------------------------------------------


def test_local_folder_verdicts_and_json(llama_dir):
    rc, doc = run_json(str(llama_dir), "--framework", "vllm", "--tp", "6")
    assert rc == 1 and doc["verdict"] == "refused"
    fe = doc["first_error"]
    assert fe["message"] == HEADS_MSG and fe["exc_type"] == "ValueError" and fe["location"] == "vllm/config/model.py:1560"
    assert fe["evidence"] == "executed" and not fe["ours"]
    assert doc["release"] == "0.33.0" and doc["evidence"] == "executed" and doc["model"]["source"] == "folder"
    assert [f["rule_id"] for f in doc["failures"]][0] == "vllm.attention_heads"
    whys = [a["why"] for a in doc["alternatives"]]
    assert whys[0] == "same_gpus" and whys[-2:] == ["smaller_tp", "larger_tp"]
    assert all(a["gpus"] == 6 for a in doc["alternatives"] if a["why"] == "same_gpus")
    assert doc["suggestions"] and doc["memory"] is None
    rc, doc = run_json(str(llama_dir / "config.json"), "--tp", "8")
    assert rc == 0 and doc["verdict"] == "accepted" and doc["failures"] == [] and doc["alternatives"] == []


def test_config_on_stdin():
    data = json.dumps(LLAMA_70B_CONFIG).encode()
    rc, out, _ = run("-", "--framework", "vllm", "--tp", "6", stdin=data)
    assert rc == 1 and HEADS_MSG in out
    rc, out, _ = run("-", "--framework", "sglang", "--tp", "8", stdin=data)
    assert rc == 0 and out.startswith("ACCEPTED: stdin (config on stdin, no Hub id) on SGLang 0.5.23, tp=8")


def test_gpu_memory_kv_tokens_and_vllms_startup_message(llama_dir):
    rc, doc = run_json(str(llama_dir), "--tp", "4", "--gpu", "H100-80GB", "--max-model-len", "32768")
    assert rc == 0
    m = doc["memory"]
    assert m["gpu"] == "H100-80GB" and m["max_model_len"] == 32768 and m["kv_bytes_per_token_per_gpu"] == 81920
    assert m["kv_tokens_per_gpu"] > 32768 and m["sequences_at_max_model_len"] >= 1 and m["holds_max_model_len"]
    # TP 2 loads (70 GB of weights per H100) but its KV cache cannot hold 131072 tokens: refused at start-up
    rc, doc = run_json(str(llama_dir), "--tp", "2", "--gpu", "H100-80GB")
    assert rc == 1 and doc["memory"]["holds_max_model_len"] is False
    fe = doc["first_error"]
    assert fe["rule_id"] == "memory.vllm.max_model_len" and fe["exc_type"] == "ValueError"
    assert fe["message"].startswith("To serve at least one request with the model's max seq len (131072), (")
    assert "which is larger than the available KV cache memory" in fe["message"]
    assert fe["location"] == "vllm/v1/core/kv_cache_planning.py:77"
    whys = {a["why"]: a for a in doc["alternatives"]}
    assert whys["larger_tp"]["tp"] == 4
    assert whys["shorter_context"]["command"].endswith(f"--max-model-len {whys['shorter_context']['max_model_len']}")
    # a V0-era release prints V0's message
    rc, doc = run_json(str(llama_dir), "--tp", "2", "--gpu", "H100-80GB", "--version", "0.6.0")
    assert rc == 1 and doc["first_error"]["message"].startswith(
        "The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (")


def test_sidecar_in_a_local_folder_is_read(tmp_path):
    d = _model_dir(tmp_path, "m", {**LLAMA_70B_CONFIG, "num_hidden_layers": 4})
    (d / "quant_config.json").write_text(json.dumps({"w_bit": 4, "q_group_size": 128, "zero_point": True}))
    rc, doc = run_json(str(d), "--tp", "8")
    assert doc["model"]["sidecars"] == ["quant_config.json"]
    rc, doc = run_json(str(d), "--tp", "8", "--quantization", "fp8")
    assert rc == 1 and doc["first_error"]["rule_id"] == "vllm.quantization_mismatch"
    assert doc["first_error"]["message"] == ("Quantization method specified in the model config (awq) does not match "
                                             "the quantization method specified in the `quantization` argument (fp8).")


# ------------------------------------------------------------------------------------------------
# launch commands
# ------------------------------------------------------------------------------------------------


def test_vllm_serve_tp8_enable_expert_parallel(llama_dir, qwen_dir):
    # an MoE model: accepted
    rc, doc = run_json("--config", str(qwen_dir), "--", "vllm", "serve", "Qwen/Qwen3-30B-A3B", "-tp", "8",
                       "--enable-expert-parallel")
    assert rc == 0 and doc["layout"]["expert_parallel"] is True and doc["layout"]["tp"] == 8
    assert doc["model"]["id"] == "Qwen/Qwen3-30B-A3B"
    # a dense model: vLLM refuses expert parallelism; the corrected commands drop the flag, keep the rest
    cmd = f"vllm serve {LLAMA_70B} -tp 8 --enable-expert-parallel --max-model-len 32k --port 8000"
    rc, out, _ = run("--config", str(llama_dir), "--", cmd)
    assert rc == 1
    assert ("1. ValueError: Number of experts in the model must be greater than 0 when expert parallelism is "
            "enabled.") in out
    assert f"same 8 GPUs: vllm serve {LLAMA_70B} --max-model-len 32k --port 8000 --tensor-parallel-size 8\n" in out
    assert "not modelled: --port" in out and "(ignored)" not in out  # accepted by the engine, not modelled


def test_sglang_launch_server_tp8_dp2_enable_dp_attention(llama_dir):
    cmd = ["python", "-m", "sglang.launch_server", "--model-path", LLAMA_70B, "--tp", "8", "--dp", "2",
           "--enable-dp-attention", "--host", "0.0.0.0"]
    rc, doc = run_json("--config", str(llama_dir), "--gpu", "H100-80GB", "--", *cmd)
    assert rc == 0 and doc["framework"] == "sglang" and doc["release"] == "0.5.23"
    assert doc["layout"] == {"tp": 8, "pp": 1, "dp": 2, "ep": 1, "dp_attention": True, "expert_parallel": False,
                             "vision_dp": False, "gpus": 8}
    assert doc["memory"]["kv_tokens_per_gpu"] > 0
    assert any("--enable-dp-attention is deprecated in SGLang 0.5.23: use --attn-dp-size 2" in w for w in doc["warnings"])
    # 0.5.22's spelling, and a refused split: the corrected commands spell attention-DP as the release does
    rc, doc = run_json("--config", str(llama_dir), "--", "python3 -m sglang.launch_server --model-path m --tp 6")
    assert rc == 1 and doc["first_error"]["message"]
    assert all("--tp-size" in a["command"] for a in doc["alternatives"])


def test_trtllm_serve_and_api_server_forms(llama_dir):
    rc, doc = run_json("--config", str(llama_dir), "--", "trtllm-serve", LLAMA_70B, "--tp_size", "8", "--pp_size", "1")
    assert rc == 0 and doc["framework"] == "tensorrt-llm" and doc["layout"]["tp"] == 8
    rc, doc = run_json("--config", str(llama_dir), "--",
                       "CUDA_VISIBLE_DEVICES=0,1 python -m vllm.entrypoints.openai.api_server "
                       f"--model={LLAMA_70B} --tensor_parallel_size=6 \\\n --gpu-memory-utilization 0.85")
    assert rc == 1 and doc["first_error"]["message"] == HEADS_MSG
    assert all("--model=" in a["command"] and "--tensor-parallel-size" in a["command"] for a in doc["alternatives"])


def test_launch_parser_spellings():
    L = parse_command("vllm serve m -tp 4 -pp 2 -dp 2 -ep --max-model-len 32K --kv-cache-dtype fp8 -q fp8 "
                      "--mm-encoder-tp-mode data --gpu-memory-utilization=0.8")
    assert (L.model, L.tp, L.pp, L.dp, L.expert_parallel, L.max_model_len, L.kv_cache_dtype, L.quantization,
            L.vision_dp, L.mem_fraction) == ("m", 4, 2, 2, True, 32768, "fp8", "fp8", True, 0.8)
    L = parse_command(["vllm", "serve", "--model", "m", "--tensor-parallel-size", "2", "--data-parallel-size", "3"])
    assert (L.model, L.tp, L.dp) == ("m", 2, 3)
    L = parse_command("python -m sglang.launch_server --model-path m --tp-size 8 --attn-dp-size 4 --ep-size 8 "
                      "--context-length 8192 --mem-fraction-static 0.85 --tensor-parallel-size=8")
    assert L.layout() == dict(tp=8, pp=1, dp=4, ep=8, dp_attention=True, expert_parallel=False, vision_dp=False)
    assert (L.max_model_len, L.mem_fraction) == (8192, 0.85)
    L = parse_command("python -m sglang.launch_server --model m --tensor-parallel-size 4 --data-parallel-size 2 "
                      "--pipeline-parallel-size 2 --expert-parallel-size 4")
    assert (L.tp, L.dp, L.pp, L.ep) == (4, 2, 2, 4)
    L = parse_command("trtllm-serve m --tp_size 8 --ep_size 4 --max_seq_len 4096 --kv_cache_free_gpu_memory_fraction 0.7")
    assert (L.framework, L.tp, L.ep, L.max_model_len, L.mem_fraction) == ("tensorrt-llm", 8, 4, 4096, 0.7)
    assert parse_command("vllm serve m --trust-remote-code -tp 2 --served-model-name x").unmodeled == [
        "--trust-remote-code", "--served-model-name"]
    for bad in ("vllm serve m -tp 0", "vllm serve m -tp abc", "vllm serve m -tp", "docker run x",
                "vllm serve m --max-model-len 1e9", "vllm serve 'm", "sglang.launch_server", "vllm bench m"):
        with pytest.raises(LaunchError):
            parse_command(bad)


# ------------------------------------------------------------------------------------------------
# hostile and bad input: exit 2, one line, no traceback, no raw control characters
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, stdin, needle", [
    (["-", "--tp", "8"], b"x" * (chk.MAX_CONFIG_BYTES + 10), "larger than"),
    (["-", "--tp", "8"], b"{not json", "unreadable config"),
    (["-", "--tp", "8"], b"[1, 2, 3]", "not a JSON object"),
    (["-", "--tp", "8"], b"", "standard input is empty"),
    (["-", "--tp", "0"], b"{}", "--tp must be a whole number"),
    (["-", "--tp", "abc"], b"{}", "--tp must be a whole number"),
    (["-", "--tp", "8", "--framework", "nope"], b"{}", "unknown framework"),
    (["-", "--tp", "8", "--gpu", "Z9"], b"{}", "unknown GPU"),
    (["../../etc/nothing-here", "--tp", "8"], None, "no such file or folder"),
    (["evil\x1b[31m/id\x07", "--tp", "8"], None, "neither a local path nor a Hub repo id"),
    (["-", "--", "vllm", "serve", "m", "-tp", "abc"], b"{}", "-tp must be a whole number"),
    (["-", "--", "rm", "-rf", "/"], b"{}", "unknown launcher"),
    (["-"], b"{}", "give --tp N"),
    (["--tp", "8"], None, "no model"),
])
def test_bad_input_exit_2_one_line(argv, stdin, needle):
    rc, out, err = run(*argv, stdin=stdin)
    assert rc == 2, (out, err)
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert "Traceback" not in err and "\x1b" not in err and "\x07" not in err


def test_json_error_document_and_no_control_characters_echoed(tmp_path):
    rc, doc = run_json("-", "--tp", "8", stdin=b"[]")
    assert rc == 2 and doc["verdict"] == "error" and "not a JSON object" in doc["error"]
    cfg = dict(LLAMA_70B_CONFIG, architectures=["Llama\x1b[2JForCausalLM"], model_type="llama")
    rc, out, err = run("-", "--tp", "6", stdin=json.dumps(cfg).encode())
    assert "\x1b" not in out and "\x1b" not in err


def test_output_to_a_closed_pipe_or_a_full_disk_is_not_a_traceback(tmp_path):
    """``tp-planner check ... | head -1`` and ``> /dev/full``: no traceback (newcomer trial)."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                               "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
                               "intermediate_size": 14336, "vocab_size": 128256}))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cmd = [sys.executable, "-m", "dashboard.cli", "check", str(cfg), "--framework", "vllm", "--tp", "3"]
    p = subprocess.run(" ".join(cmd) + " | head -c 10", shell=True, capture_output=True, text=True, env=env,
                       timeout=300)
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr
    if Path("/dev/full").exists():
        with open("/dev/full", "w") as full:
            q = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
        assert q.returncode == 2 and "Traceback" not in q.stderr
        assert q.stderr.strip().splitlines()[-1].startswith("tp-planner: cannot write the output")


@pytest.mark.parametrize("version,needle", [
    ("garbage", "expected a release number"), ("99.0.0", "vLLM has no release 99.0.0"),
    ("2019-01", "vLLM had no release by 2019-01"),
])
def test_a_version_the_command_cannot_honour_is_bad_input(tmp_path, version, needle, capsys):
    """The dashboard falls back with a notice; the command line refuses (exit 2, one line) instead of
    judging with another release's rules (newcomer trial)."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                               "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
                               "intermediate_size": 14336, "vocab_size": 128256}))
    rc = chk.main([str(cfg), "--framework", "vllm", "--tp", "2", "--version", version])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and needle in err[0]
    assert chk.main([str(cfg), "--framework", "vllm", "--tp", "2", "--version", "2025-05"]) == 0


def test_a_hub_that_never_answers_is_exit_2_with_one_line_within_the_deadline(tmp_path):
    """huggingface_hub retries each request with its own timeouts: a Hub that accepts connections but never
    answers must not hold the command for minutes (a newcomer waited 399 s). The fetch is bounded by
    TP_PLANNER_HUB_DEADLINE_S and reported in one line, without huggingface_hub's retry chatter."""
    import time

    with FakeHub() as hub:
        hub.add(LLAMA_70B, LLAMA_70B_CONFIG)
        hub.inject(LLAMA_70B, "resolve", *({"sleep": 60} for _ in range(20)))
        env = _env(hub.url, tmp_path / "hf-home", TP_PLANNER_HUB_DEADLINE_S="4")
        t0 = time.monotonic()
        r = _cli(LLAMA_70B, "--framework", "vllm", "--tp", "8", "--refresh", env=env)
        took = time.monotonic() - t0
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "did not answer within 4 s" in lines[0] and "Traceback" not in r.stderr
    assert took < 60, took
