"""TensorRT-LLM's ``trtllm-serve`` flags, read from source (data/flags/tensorrt-llm-*.json, written by
conformance/trtllm_flags.py) and parsed by the product's port of click's parser (dashboard/flagspec.py).

The spec's probes are click itself (the release named in the spec) run on a command rebuilt from the spec:
the port must print each probe's last line word for word. TensorRT-LLM was not run (no CUDA, no wheel).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from conformance import trtllm_flags
from dashboard import flagspec
from dashboard.launch import check_flags, parse_command

DATA = Path(__file__).resolve().parent / "data" / "launch_commands_trtllm.tsv"
FW = "tensorrt-llm"
RELEASES = flagspec.releases(FW)


def _commands():
    rows = []
    for line in DATA.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fw, url, cmd = line.split("\t")
        rows.append((fw, url, cmd))
    return rows


def _config(tmp_path: Path) -> Path:
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
           "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
           "num_hidden_layers": 32, "vocab_size": 128256, "max_position_embeddings": 131072,
           "torch_dtype": "bfloat16", "_name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return p


def test_a_spec_is_written_and_marked_read_from_source():
    assert RELEASES, "no data/flags/tensorrt-llm-*.json"
    for rel in RELEASES:
        spec = flagspec.load(FW, rel)
        assert spec["evidence"] == "source" and spec["parser_class"] == "click"
        assert re.fullmatch(r"https://github\.com/NVIDIA/TensorRT-LLM/blob/[0-9a-f]{40}/tensorrt_llm/commands/serve\.py",
                            spec["source_url"])
        assert spec["release_note"] and spec["click"]["version"]
        spell = flagspec.spellings(spec)
        assert {"--tp_size", "--pp_size", "--ep_size", "--kv_cache_free_gpu_memory_fraction", "--trust_remote_code"} <= set(spell)
        assert len(spell) == len(set(spell))


@pytest.mark.parametrize("rel", RELEASES)
def test_the_click_port_prints_what_click_printed_for_each_probe(rel):
    spec = flagspec.load(FW, rel)
    assert len(spec["probes"]) >= 10
    for pr in spec["probes"]:
        argv = pr["argv"]
        sub = bool(argv) and argv[0] == "serve"
        with pytest.raises(flagspec.EngineParseError) as e:
            flagspec.click_parse(spec, argv[1:] if sub else argv, subcommand_written=sub)
        assert str(e.value) == pr["stderr_last_line"], argv
        assert pr["exit_status"] == 2 and pr["stderr_last_line"].startswith("Error: ")


def test_the_generator_reads_click_decorators_without_importing():
    """conformance.trtllm_flags.read on a click command written here (ours): aliases, flags, multiple,
    unresolved choices, expression defaults, an explicit parameter name, the DefaultGroup."""
    src = '''
@click.command("serve")
@click.argument("model", type=str)
@click.option("--backend", type=ChoiceWithAlias(["pytorch", "tensorrt"], {"trt": "tensorrt"}), default="pytorch",
              help=help_info_with_stability_tag("The backend.", "beta"))
@click.option("--tensor_parallel_size", "--tp_size", type=int, default=1, help="TP.")
@click.option("--log_level", type=click.Choice(severity_map.keys()), default="info")
@click.option("--max_batch_size", type=int, default=BuildConfig.model_fields["max_batch_size"].default)
@click.option("--trust_remote_code", is_flag=True, default=False)
@click.option("--config", "--extra_llm_api_options", "extra_llm_api_options", type=str, default=None)
@click.option("--dirs", type=click.Path(exists=True), multiple=True)
def serve(model, backend, tensor_parallel_size, log_level, max_batch_size, trust_remote_code,
          extra_llm_api_options, dirs):
    """Doc."""

class DefaultGroup(click.Group):
    pass

main = DefaultGroup(commands={"serve": serve, "grpc": grpc})
'''
    got = trtllm_flags.read(src)
    by = {f["dest"]: f for f in got["flags"]}
    assert [f["dest"] for f in got["flags"]] == ["backend", "tensor_parallel_size", "log_level", "max_batch_size",
                                                 "trust_remote_code", "extra_llm_api_options", "dirs", "help"]
    assert by["backend"]["choices"] == ["pytorch", "tensorrt"] and by["backend"]["aliases"] == {"trt": "tensorrt"}
    assert by["backend"]["stability"] == "beta" and by["backend"]["help"] == "The backend."
    assert by["tensor_parallel_size"]["option_strings"] == ["--tensor_parallel_size", "--tp_size"]
    assert by["log_level"]["choices"] is None and by["log_level"]["choices_from"] == "severity_map.keys()"
    assert by["max_batch_size"]["default_expr"].startswith("BuildConfig.model_fields")
    assert by["trust_remote_code"]["takes_value"] is False
    assert by["extra_llm_api_options"]["option_strings"] == ["--config", "--extra_llm_api_options"]
    assert by["dirs"]["action"] == "append" and by["dirs"]["type"] == "path"
    assert got["positionals"][0]["metavar"] == "MODEL" and got["default_group"]
    assert got["subcommands"] == ["serve", "grpc"]
    with pytest.raises(ValueError):
        trtllm_flags.read("def other():\n    pass\n")


def test_at_least_five_real_trtllm_serve_commands_with_pinned_sources():
    rows = _commands()
    assert len(rows) >= 5 and len({c for _, _, c in rows}) == len(rows)
    assert all(re.match(r"https://github\.com/NVIDIA/TensorRT-LLM/blob/[0-9a-f]{40}/", u) for _, u, _ in rows)


@pytest.mark.parametrize("fw,url,cmd", _commands())
@pytest.mark.parametrize("rel", RELEASES)
def test_real_commands_parse_with_the_source_spec(fw, url, cmd, rel):
    launch = parse_command(cmd)
    assert launch.framework == fw == FW
    rep = check_flags(launch, rel)
    assert rep.evidence == "source" and not rep.refused, rep.error
    assert len(rep.accepted) == sum(1 for t in launch.tokens[launch.start:] if t.startswith("-"))
    assert launch.tp is not None and launch.model and not launch.model.startswith("-")


@pytest.mark.parametrize("rel", RELEASES)
def test_the_group_refuses_options_before_the_model_and_serve_takes_them(rel):
    """click's DefaultGroup parses options before the subcommand with only --help: ``trtllm-serve --tp_size
    8 MODEL`` stops there; ``trtllm-serve serve --tp_size 8 MODEL`` and ``trtllm-serve MODEL --tp_size 8`` start."""
    assert check_flags(parse_command("trtllm-serve --tp_size 8 m"), rel).error == "Error: No such option: --tp_size"
    assert not check_flags(parse_command("trtllm-serve serve --tp_size 8 m"), rel).refused
    assert not check_flags(parse_command("trtllm-serve m --tp_size 8 --backend trt"), rel).refused  # alias
    assert check_flags(parse_command("trtllm-serve m --tp_size 8 --help"), rel).error == ""  # help: not a refusal


def test_check_refuses_a_typo_with_clicks_message_read_from_source(tmp_path):
    """tp-planner check -- trtllm-serve ... --tp_sizee 8: exit 1, click's line, marked read from source."""
    from dashboard.check.cli import main

    cfg = _config(tmp_path)
    cmd = ["trtllm-serve", "meta-llama/Llama-3.1-8B-Instruct", "--tp_sizee", "8"]
    out, err = io.StringIO(), io.StringIO()
    rc = main(["--config", str(cfg), "--json", "--", *cmd], stdout=out, stderr=err)
    doc = json.loads(out.getvalue())
    lf = doc["launch_flags"]
    assert rc == 1 and doc["exit_status"] == 1, err.getvalue()
    assert lf["refused"] and lf["evidence"] == "source" and lf["release"] == RELEASES[-1]
    assert lf["error"].startswith("Error: No such option: --tp_sizee ")
    assert "--tp_size" in lf["error"] and "--tp_size" in lf["did_you_mean"]
    assert "read from source, not executed" in lf["condition"] and "executed:" not in lf["condition"]
    assert "read from source, not executed" in doc["evidence_text"]
    out = io.StringIO()
    assert main(["--config", str(cfg), "--", *cmd], stdout=out, stderr=err) == 1
    text = out.getvalue()
    assert "REFUSED" in text and lf["error"] in text and "read from source, not executed" in text


def test_check_lists_flags_accepted_but_not_modelled(tmp_path):
    from dashboard.check.cli import main

    cfg = _config(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    rc = main(["--config", str(cfg), "--json", "--", "trtllm-serve", "m", "--tp_size", "2", "--trust_remote_code",
               "--max_num_tokens", "2048", "--host", "0.0.0.0"], stdout=out, stderr=err)
    doc = json.loads(out.getvalue())
    lf = doc["launch_flags"]
    assert rc == 0 and not lf["refused"] and lf["evidence"] == "source"
    assert lf["accepted_not_modelled"] == ["--host", "--max_num_tokens", "--trust_remote_code"]
    assert "read from source, not executed" in lf["note"]
