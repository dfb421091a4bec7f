"""The ``config:`` line of ``tp-planner check`` names the file (or folder) it read, quoted so that it can be
pasted back into a shell, control characters escaped (dashboard/check/source.py Source.describe)."""

from __future__ import annotations

import io
import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from dashboard.check.cli import main
from dashboard.check.source import quote_path

CFG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
       "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
       "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}


def _config_line(args: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    rc = main([*args, "--framework", "vllm", "--tp", "2"], stdout=out, stderr=err)
    assert rc == 0, err.getvalue()
    return next(ln for ln in out.getvalue().splitlines() if ln.startswith("  config: "))[len("  config: "):]


@pytest.mark.parametrize("name", ["config.json", "my dir/config.json", "it's/cfg.json"])
@pytest.mark.parametrize("how", ["--config", "positional"])
def test_the_config_line_shows_the_path_read(tmp_path, name, how):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(CFG))
    line = _config_line(["--config", str(p)] if how == "--config" else [str(p)])
    kind, _, shown = line.partition(" ")
    assert kind == "file"
    assert shlex.split(shown) == [str(p)]  # pasted back into a shell, it is the same path


def test_the_config_line_of_a_folder_shows_the_folder(tmp_path):
    d = tmp_path / "model dir"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CFG))
    line = _config_line([str(d)])
    assert line.startswith("folder ") and shlex.split(line[len("folder "):]) == [str(d)]


def test_the_json_names_the_path_too(tmp_path):
    p = tmp_path / "a b.json"
    p.write_text(json.dumps(CFG))
    out, err = io.StringIO(), io.StringIO()
    assert main(["--config", str(p), "--framework", "vllm", "--tp", "2", "--json"], stdout=out, stderr=err) == 0
    doc = json.loads(out.getvalue())
    assert doc["model"]["path"] == str(p) and shlex.split(doc["model"]["config"].partition(" ")[2]) == [str(p)]


def test_control_characters_in_the_path_are_escaped(tmp_path):
    p = tmp_path / "evil\x1b[31m\nname.json"
    p.write_text(json.dumps(CFG))
    line = _config_line(["--config", str(p)])
    assert "\x1b" not in line and "\n" not in line
    shown = line.partition(" ")[2]
    assert shown.startswith("$'") and "\\x1b" in shown and "\\n" in shown
    if shutil.which("bash"):  # bash reads the $'...' string back as the path
        got = subprocess.run(["bash", "-c", f"printf %s {shown}"], capture_output=True).stdout
        assert got == str(p).encode()


def test_quote_path_leaves_safe_paths_bare():
    assert quote_path("/data/models/config.json") == "/data/models/config.json"
    assert quote_path("a b") == "'a b'"


def _head(args: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main([*args, "--framework", "vllm", "--tp", "2"], stdout=out, stderr=err) == 0, err.getvalue()
    return out.getvalue().splitlines()[0]


def test_a_local_config_without_a_hub_id_is_not_named_as_if_it_were_one(tmp_path):
    """Issue 22: a folder or file with no ``_name_or_path`` is named by its folder or file name, and the
    header says it is a local name; a config naming its Hub id (or an ``org--name`` file) keeps the id."""
    (tmp_path / "mymodel").mkdir()
    (tmp_path / "mymodel" / "config.json").write_text(json.dumps(CFG))
    assert _head([str(tmp_path / "mymodel")]).startswith("ACCEPTED: mymodel (local config, no Hub id) on vLLM")
    (tmp_path / "org--name.json").write_text(json.dumps(CFG))
    assert _head([str(tmp_path / "org--name.json")]).startswith("ACCEPTED: org/name on vLLM")
    (tmp_path / "named.json").write_text(json.dumps(dict(CFG, _name_or_path="meta-llama/Llama-3.1-8B")))
    assert _head([str(tmp_path / "named.json")]).startswith("ACCEPTED: meta-llama/Llama-3.1-8B on vLLM")
