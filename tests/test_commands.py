"""Commands that run as printed and the CLI's smaller inconsistencies (issue 22 items 4 and 8): one command
per instance with its GPUs, the model named by its Hub id (or a marked placeholder), warnings once, one
token-count parser for check and plan, JSON errors from plan, "did you mean" for GPUs, plurals, partial nodes,
the cross-node refusal worded for where it is read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dashboard import check as chk
from dashboard import planner
from dashboard.launch import (
    MODEL_PLACEHOLDER, LaunchError, command_model, gpu_sets, hub_id, instance_count, parse_command, parse_len,
    render_commands)
from tests.conftest import SHARED

LLAMA = "meta-llama/Llama-3.1-70B-Instruct"
CONFIGS = SHARED / "hub-configs"


def run(mod, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if mod is chk:
        rc = chk.main(list(argv), stdin=io.BytesIO(b""), stdout=out, stderr=err)
        return rc, out.getvalue(), err.getvalue()
    import contextlib

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = planner.main(list(argv))
        except SystemExit as e:  # argparse's own usage errors
            rc = int(e.code)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def llama_file() -> Path:
    p = CONFIGS / "meta-llama--Llama-3.1-70B-Instruct.json"
    assert p.is_file()
    return p


# ---------------------------------------------------------------- one command per instance --------
def test_trtllm_same_gpus_alternative_is_three_instances_with_their_gpus(llama_file):
    rc, out, _ = run(chk, "--config", str(llama_file), "--json", "--", "trtllm-serve", LLAMA, "--tp_size", "6",
                     "--port", "9000")
    doc = json.loads(out)
    assert rc == 1
    alt = next(a for a in doc["alternatives"] if a["why"] == "same_gpus" and a["tp"] == 2 and a["dp"] == 3)
    inst = alt["instances"]
    assert [i["gpus"] for i in inst] == [[0, 1], [2, 3], [4, 5]]
    for k, i in enumerate(inst):
        assert i["command"].startswith(f"CUDA_VISIBLE_DEVICES={','.join(map(str, i['gpus']))} trtllm-serve {LLAMA} ")
        assert i["command"].endswith(f"--port {9000 + k}") and i["command"].count("--port") == 1
        assert parse_command(i["command"]).tp == 2  # each runs as printed
    assert alt["command"] == "\n".join(i["command"] for i in inst)
    # TP 2 x PP 3 is one process on all six GPUs
    pp3 = next(a for a in doc["alternatives"] if a["tp"] == 2 and a["pp"] == 3)
    assert len(pp3["instances"]) == 1 and pp3["instances"][0]["gpus"] is None
    rc, text, _ = run(chk, "--config", str(llama_file), "--", "trtllm-serve", LLAMA, "--tp_size", "6")
    assert "same 6 GPUs: run 3 instances of 2 GPUs, one command each:" in text
    assert "      CUDA_VISIBLE_DEVICES=4,5 trtllm-serve meta-llama/Llama-3.1-70B-Instruct --tp_size 2 --port 8002" in text
    assert "run 6 instances of 1 GPU, one command each:" in text  # not "1 GPUs"


def test_a_framework_with_a_dp_flag_keeps_one_command():
    lay = dict(tp=2, pp=1, dp=3, ep=1, dp_attention=False, expert_parallel=False)
    assert instance_count("vllm", lay) == (1, 6)
    assert instance_count("tensorrt-llm", lay) == (3, 2)
    assert instance_count("tensorrt-llm", dict(lay, dp_attention=True)) == (1, 2)  # attention-DP inside TP
    (one,) = render_commands("vllm", "org/m", lay)
    assert one["command"] == "vllm serve org/m --tensor-parallel-size 2 --data-parallel-size 3"
    three = render_commands("tensorrt-llm", "org/m", lay)
    assert [c["command"] for c in three] == [
        f"CUDA_VISIBLE_DEVICES={d} trtllm-serve org/m --tp_size 2 --port {p}"
        for d, p in (("0,1", 8000), ("2,3", 8001), ("4,5", 8002))]


def test_gpu_sets_fill_nodes_and_the_planner_uses_them():
    assert [g for _, g in gpu_sets(3, 2)] == [(0, 1), (2, 3), (4, 5)]
    assert gpu_sets(4, 3, 8) == [(0, (0, 1, 2)), (0, (3, 4, 5)), (1, (0, 1, 2)), (1, (3, 4, 5))]
    p = planner.plan(LLAMA, 16, "H100-80GB", context_len=8192, frameworks=("tensorrt-llm",))
    r = p[(p["tp"] == 4) & (p["pp"] == 1) & (p["dp"] == 4) & (p["attn_dp"] == 1)].iloc[0]
    devs = [c.split("CUDA_VISIBLE_DEVICES=")[1].split()[0] for c in r["commands"]]
    assert devs == [",".join(map(str, g)) for _, g in gpu_sets(4, 4, 8)] == ["0,1,2,3", "4,5,6,7"] * 2


# ---------------------------------------------------------------- the model in the commands -------
def test_a_config_file_named_org__name_gives_the_hub_id(llama_file, tmp_path):
    rc, out, _ = run(chk, str(llama_file), "--framework", "vllm", "--tp", "6", "--json")
    doc = json.loads(out)
    assert doc["model"]["id"] == LLAMA
    assert all(f" {LLAMA} " in a["command"] and "--" + "Llama" not in a["command"] for a in doc["alternatives"])
    # _name_or_path wins over the file name
    cfg = json.loads(llama_file.read_text())
    p = tmp_path / "whatever.json"
    p.write_text(json.dumps({**cfg, "_name_or_path": "acme/Llama-70B-ft"}))
    doc = json.loads(run(chk, str(p), "--framework", "sglang", "--tp", "6", "--json")[1])
    assert all("--model-path acme/Llama-70B-ft " in a["command"] for a in doc["alternatives"])
    # no id known: the marked placeholder, and a note saying so
    p = tmp_path / "odd.json"
    p.write_text(json.dumps(cfg))
    doc = json.loads(run(chk, str(p), "--framework", "vllm", "--tp", "6", "--json")[1])
    assert all(f"vllm serve '{MODEL_PLACEHOLDER}' " in a["command"] for a in doc["alternatives"])
    assert any(MODEL_PLACEHOLDER in n and "Hub id" in n for n in doc["notes"])


def test_hub_id_mapping():
    assert hub_id("meta-llama--Llama-3.1-70B-Instruct") == LLAMA
    assert hub_id("(upload)/Qwen--Qwen3-8B") == "Qwen/Qwen3-8B"
    assert hub_id("01-ai--Yi-34B") == "01-ai/Yi-34B"
    assert hub_id("a--b--c") is None and hub_id("../etc/passwd") is None and hub_id("stdin") is None
    assert command_model("x", kind="folder", where="/models/x") == ("/models/x", "")
    assert command_model("x", kind="file", where="/models/x/config.json") == ("/models/x", "")
    assert command_model("(upload)/x")[0] == MODEL_PLACEHOLDER
    p = planner.plan(LLAMA, 8, "H100-80GB", context_len=8192, frameworks=("vllm",))
    assert p.attrs["command_model"] == LLAMA and p.attrs["model_note"] == ""


# ---------------------------------------------------------------- smaller inconsistencies --------
def test_a_warning_is_printed_once(llama_file):
    rc, text, _ = run(chk, "--config", str(llama_file), "--version", "0.5.0", "--", "vllm", "serve", LLAMA, "-tp", "8")
    warned = [ln[len("warning: "):] for ln in text.splitlines() if ln.startswith("warning: ")]
    noted = [ln[len("note: "):] for ln in text.splitlines() if ln.startswith("note: ")]
    assert any("never run through the conformance harness" in w for w in warned)
    assert not set(warned) & set(noted)


def test_plan_context_len_reads_the_same_forms_as_check():
    for text, want in (("32k", 32000), ("32K", 32768), ("8192", 8192), ("1m", 1000000)):
        assert parse_len(text) == want
        rc, out, err = run(planner, LLAMA, "--gpus", "8", "--gpu", "H100-80GB", "--framework", "vllm",
                           "--context-len", text, "--json")
        assert rc in (0, 1), err
        assert json.loads(out)["context_len"] == want
    with pytest.raises(LaunchError):
        parse_len("32q")
    rc, out, err = run(planner, LLAMA, "--gpus", "8", "--gpu", "H100-80GB", "--context-len", "32q", "--json")
    assert rc == 2 and "--context-len must be a whole number of tokens" in err
    assert json.loads(out)["error"].startswith("--context-len must be")


def test_plan_json_prints_an_error_object_for_bad_input():
    rc, out, err = run(planner, LLAMA, "--gpus", "8", "--gpu", "H200", "--json")
    doc = json.loads(out)
    assert rc == 2 and doc["exit_status"] == 2 and doc["schema_version"] == planner.SCHEMA_VERSION
    assert "did you mean H200-141GB?" in doc["error"] and "did you mean H200-141GB?" in err
    rc, out, _ = run(planner, LLAMA, "--gpus", "8", "--json")  # argparse's own error
    assert rc == 2 and "--gpu" in json.loads(out)["error"]
    rc, out, _ = run(planner, LLAMA, "--gpus", "8")  # without --json: nothing on stdout
    assert rc == 2 and out == ""


def test_gpu_did_you_mean_in_check():
    rc, out, err = run(chk, LLAMA, "--framework", "vllm", "--tp", "8", "--gpu", "H200", "--config",
                       str(CONFIGS / "meta-llama--Llama-3.1-70B-Instruct.json"))
    assert rc == 2 and "did you mean H200-141GB?" in err
    from dashboard.gpus import suggest_gpus

    assert suggest_gpus("h100")[:1] == ["H100-80GB"] and suggest_gpus("zzzz") == []


def test_one_gpu_is_singular(llama_file):
    rc, text, _ = run(chk, str(CONFIGS / "Qwen--Qwen3-30B-A3B.json"), "--framework", "vllm", "--tp", "1")
    assert "(1 GPU)" in text and "1 GPUs" not in text
    p = planner.plan("Qwen/Qwen2.5-7B-Instruct", 1, "H100-80GB", context_len=8192, frameworks=("vllm",))
    assert p.iloc[0]["commands"][0].startswith("# one node, 1 GPU\n")
    assert "at least 1 sequence;" in planner.format_table(p)


def test_partial_last_node_is_said():
    rc, text, _ = run(planner, LLAMA, "--gpus", "8", "--gpus-per-node", "3", "--gpu", "H100-80GB",
                      "--framework", "vllm", "--context-len", "8k")
    assert "Note: 8 GPUs on nodes of 3: 3 nodes, the last with 2 of its 3 GPUs" in text
    p = planner.plan(LLAMA, 16, "H100-80GB", context_len=8192, frameworks=("vllm",))
    assert p.attrs["node_note"] == "" and planner.plan_to_dict(p)["node_note"] == ""


def test_cross_node_refusal_names_the_control_where_it_is_read():
    rc, text, _ = run(planner, LLAMA, "--gpus", "16", "--gpu", "H100-80GB", "--framework", "vllm",
                      "--context-len", "8k")
    line = next(ln for ln in text.splitlines() if "TP 16 refused by vLLM" in ln)
    assert line.endswith("unless cross-node TP is allowed (--cross-node-tp).") and "cross_node_tp" not in line
    api = planner.plan(LLAMA, 16, "H100-80GB", context_len=8192, frameworks=("vllm",))
    msg = api.loc[api["refusal_kind"] == "cross_node_tp", "refusal"].iloc[0]
    assert "(plan(..., cross_node_tp=True))" in msg
    dash = planner.plan(LLAMA, 16, "H100-80GB", context_len=8192, frameworks=("vllm",),
                        cross_node_hint=planner.CROSS_NODE_HINTS["dashboard"])
    msg = dash.loc[dash["refusal_kind"] == "cross_node_tp", "refusal"].iloc[0]
    assert "the Plan tab keeps TP within a node" in msg and "cross_node_tp" not in msg


def test_transformers_source_links_name_a_file_and_line():
    """Issue 22 item 8: rules without a raise site linked to ``.../v5.24.0/src/``; every transformers rule
    now links a file and line of the release."""
    import re

    from dashboard import rules

    for fw in ("transformers-native-tp", "transformers-cb-cache"):
        for r in rules.rules_for(fw, None):
            assert re.search(r"/blob/v5\.24\.0/src/transformers/[\w/]+\.py#L\d+(-L\d+)?$", r.source_url), (r.id, r.source_url)
    heads = next(r for r in rules.rules_for("transformers-native-tp", None) if r.id.endswith("attention_heads.q_proj"))
    assert heads.source_url.endswith("/distributed/tensor_parallel.py#L143-L146")


def test_the_cli_prints_each_command_whole(llama_file):
    """Wrapping happens at spaces only: the text output never breaks a command (so never inside a flag
    such as ``--max-model-len``); each command is one line however long, and parses as the engine's."""
    p = planner.plan(LLAMA, 16, "H100-80GB", context_len=8192)
    lines = planner.format_table(p, limit=3).splitlines()
    for r in planner.best(p).to_dict("records"):
        for cmd in r["commands"]:
            for ln in cmd.splitlines():
                assert "  " + ln in lines
                if not ln.startswith("#"):
                    assert len(ln) > 100
                    if " mpirun " not in f" {ln}":  # a replica over nodes: mpirun ... trtllm-llmapi-launch
                        assert parse_command(ln.split(" && ")[-1]).framework == r["framework"]
    rc, text, _ = run(chk, "--config", str(llama_file), "--", "vllm", "serve", LLAMA, "--tensor-parallel-size", "6",
                      "--max-model-len", "8192")
    doc = json.loads(run(chk, "--config", str(llama_file), "--json", "--", "vllm", "serve", LLAMA,
                         "--tensor-parallel-size", "6", "--max-model-len", "8192")[1])
    for a in doc["alternatives"]:
        assert any(ln.endswith(": " + a["command"]) for ln in text.splitlines())


def test_plan_json_gives_each_instance_its_gpus():
    p = planner.plan(LLAMA, 16, "H100-80GB", context_len=8192, frameworks=("tensorrt-llm", "vllm"))
    d = planner.plan_to_dict(p)
    r = next(x for x in d["layouts"] if x["framework"] == "tensorrt-llm" and x["tp"] == 4 and x["dp"] == 4
             and x["attn_dp"] == 1)
    assert [i["gpus"] for i in r["launch"]] == [[0, 1, 2, 3], [4, 5, 6, 7]] * 2
    assert [i["where"] for i in r["launch"]][:2] == ["node 0, replica 0", "node 0, replica 1"]
    assert all(i["command"].startswith("CUDA_VISIBLE_DEVICES=") and "\n" not in i["command"] for i in r["launch"])
    v = next(x for x in d["layouts"] if x["framework"] == "vllm" and x["tp"] == 8 and x["pp"] == 2)
    assert [i["where"] for i in v["launch"]] == ["node 0 (head, API server)", "node 1"]
    assert all(i["gpus"] is None and i["command"].startswith("vllm serve ") for i in v["launch"])
