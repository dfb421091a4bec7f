"""Issue 24, the command line: bounded work on the largest accepted sizes, one number reader, one-line usage
errors, and one terminal-escaping function for every printed input string."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.sharding import divisors, parallel_size, whole_number
from dashboard.terminal import safe_text

ROOT = Path(__file__).resolve().parents[1]
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
#: ESC ] 0 ; title BEL sets the terminal title; NUL; U+202E reverses what follows
HOSTILE = "llama\x1b]0;PWNED\x07\x00\u202e\x9b31m\u2066x\u2069"


def _bad_chars(text: str) -> list[str]:
    return [hex(ord(c)) for c in text if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F
            or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 or 0xD800 <= ord(c) <= 0xDFFF]


def _run(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "dashboard.cli", *argv], env=env, capture_output=True,
                          timeout=timeout, cwd=ROOT)


@pytest.fixture
def llama_file(tmp_path):
    p = tmp_path / "llama.json"
    p.write_text(json.dumps(LLAMA))
    return str(p)


# ---- item 2: divisors in O(sqrt n), check on 4096^3 ------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 12, 36, 49, 97, 4096, 60480, 2 * 3 * 5 * 7 * 11 * 13])
def test_divisors_match_the_definition(n):
    assert divisors(n) == [d for d in range(1, n + 1) if n % d == 0]


def test_divisors_of_4096_cubed_without_looping_to_n():
    # the old loop went to n = 2**36 (hours); this is 2**18 steps
    assert divisors(4096**3) == [2**k for k in range(37)]


def test_check_answers_on_the_largest_accepted_layout(llama_file):
    # before issue 24 this ran for hours (a loop over every number up to 4096**3); the subprocess timeout
    # only turns a hang into a failure, the benchmark (scripts/bench_worst_case.py) measures the time
    for argv in (["--tp", "4096", "--pp", "4096", "--dp", "4096"],
                 ["--", "vllm", "serve", "m", "-tp", "4096", "-pp", "4096", "-dp", "4096"]):
        p = _run("check", llama_file, *argv, timeout=90)
        out = p.stdout.decode()
        assert p.returncode == 1, p.stderr
        assert out.startswith("REFUSED:") and "68719476736 GPUs" in out
        # no alternative offers a size the command itself refuses
        for line in out.splitlines():
            for flag in ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size"):
                if flag in line:
                    assert int(line.split(flag)[1].split()[0]) <= 4096, line


# ---- item 11: plan reads numbers as check does, usage errors are one line -----------------------------


@pytest.mark.parametrize("text", ["٨", "1_6", "８", " 8x", "", "0x8", "+8", "8.0"])
def test_whole_number_is_ascii_digits_only(text):
    assert whole_number(text) is None
    with pytest.raises(ValueError):
        parallel_size(text, "--gpus")


def test_whole_number_accepts_plain_digits():
    assert whole_number(" 16 ") == 16 and parallel_size("8", "--gpus") == 8


@pytest.mark.parametrize("gpus", ["٨", "1_6"])
def test_plan_refuses_what_check_refuses_in_one_line(llama_file, gpus):
    p = _run("plan", llama_file, "--gpus", gpus, "--gpu", "H100-80GB")
    err = p.stderr.decode().strip()
    assert p.returncode == 2
    assert err.count("\n") == 0 and err.startswith("tp-planner plan: error: --gpus"), err
    c = _run("check", llama_file, "--tp", gpus)
    assert c.returncode == 2


def test_plan_usage_error_is_one_line_like_check(llama_file):
    p = _run("plan", llama_file, "--gpu", "H100-80GB")  # --gpus missing
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and err.count("\n") == 0, err
    assert err == "tp-planner plan: error: the following arguments are required: --gpus"
    p = _run("plan", llama_file, "--gpus", "8", "--gpu", "H100-80GB", "--limit", "٨", "--json")
    assert p.returncode == 2 and p.stderr.decode().count("\n") == 1
    assert json.loads(p.stdout)["exit_status"] == 2


# ---- item 6: one escaping function for every printed input string ------------------------------------


def test_safe_text_replaces_controls_escapes_and_bidi():
    s = safe_text(HOSTILE + "\ud800\u2028")
    assert _bad_chars(s) == [] and "\u2028" not in s
    assert s.startswith("llama?]0;PWNED???") and "\n" not in safe_text("a\nb")
    assert safe_text("a\nb", keep_newlines=True) == "a\nb"
    assert safe_text("Llama-3.1 ÷ é 中文") == "Llama-3.1 ÷ é 中文"  # ordinary text is left alone
    assert safe_text("x" * 50, 10) == "xxxxxxx..."


@pytest.mark.parametrize("argv", [
    ["plan", "{cfg}", "--gpus", "8", "--gpu", "H100-80GB", "--limit", "3"],
    ["plan", "{cfg}", "--gpus", "8", "--gpu", "H100-80GB", "--limit", "3", "--json"],
    ["check", "{cfg}", "--tp", "3"],
    ["check", "{cfg}", "--tp", "3", "--json"],
    ["check", "{cfg}", "--tp", "2", "--gpu", "H100-80GB"],
])
def test_no_config_string_reaches_the_terminal_raw(tmp_path, argv):
    folder = tmp_path / "evil\u202eslif"
    folder.mkdir()
    cfg = folder / "config.json"
    cfg.write_text(json.dumps(dict(LLAMA, model_type=HOSTILE, _name_or_path="evil/\u202emodel")), encoding="utf-8")
    p = _run(*[a.format(cfg=cfg) for a in argv])
    out = p.stdout.decode("utf-8") + p.stderr.decode("utf-8")
    assert "PWNED" in out or "evil" in out  # the strings are shown ...
    assert _bad_chars(out) == []  # ... escaped


def test_check_refuses_a_bidi_flag_value_printably():
    p = _run("check", "m\u202eodel", "--tp", "\u202e8")
    assert p.returncode == 2 and _bad_chars(p.stderr.decode()) == []


# ---- item 8: configs the memory model cannot size, and bad environment variables -----------------------


@pytest.mark.parametrize("change,field", [
    ({"vocab_size": -5}, "vocab_size"),
    ({"vocab_size": 2**4000}, "vocab_size"),
    ({"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512}, "qk_rope_head_dim"),
])
def test_check_gpu_names_what_the_memory_check_lacks(tmp_path, change, field):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({**LLAMA, **change}))
    p = _run("check", str(cfg), "--tp", "8", "--gpu", "H100-80GB")
    err = p.stderr.decode()
    assert p.returncode == 2 and "internal error" not in err, err
    assert err.count("\n") == 1 and "cannot size this config" in err and field in err


def test_the_hostile_mla_config_with_gpu_is_a_clear_error():
    p = _run("check", str(ROOT / "tests" / "hostile" / "64-mla-missing-parts.json"), "--tp", "8", "--gpu", "H100-80GB")
    assert p.returncode == 2 and "internal error" not in p.stderr.decode()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "garbage", "0", "1e9", "٨"])
def test_a_bad_hub_deadline_is_one_line_at_start_up(llama_file, value):
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TP_PLANNER_HUB_DEADLINE_S=value)
    for argv in (["check", "acme/not-in-the-catalog", "--tp", "8"], ["plan", "acme/x", "--gpus", "8", "--gpu", "H100-80GB"]):
        p = subprocess.run([sys.executable, "-m", "dashboard.cli", *argv], env=env, capture_output=True, timeout=60)
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("\n") == 1, err
        assert "TP_PLANNER_HUB_DEADLINE_S=" in err and "internal error" not in err


def test_environment_errors_name_each_variable(tmp_path):
    from dashboard.environment import environment_errors, hub_deadline_s

    assert environment_errors({}) == []
    assert hub_deadline_s({"TP_PLANNER_HUB_DEADLINE_S": " 2.5 "}) == 2.5
    bad = environment_errors({"TP_PLANNER_HUB_DEADLINE_S": "nan", "TP_PLANNER_CATALOG": str(tmp_path / "no"),
                              "HF_HUB_ETAG_TIMEOUT": "inf", "HF_HUB_OFFLINE": "maybe", "TP_PLANNER_HUB_TOKEN": "x"})
    assert len(bad) == 5 and all("\n" not in b for b in bad)


def test_huggingface_hub_timeouts_are_checked_before_it_reads_them():
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_ETAG_TIMEOUT="inf", HF_ENDPOINT="http://127.0.0.1:9")
    p = subprocess.run([sys.executable, "-m", "dashboard.cli", "hub", "scrape", "a/b", "--no-progress"], env=env,
                       capture_output=True, timeout=60)
    assert p.returncode == 2 and p.stderr.decode().strip() == (
        "tp-planner hub: error: HF_HUB_ETAG_TIMEOUT='inf': expected a whole number of seconds >= 1")
