"""Launch flags as the engine's own parser sees them (dashboard/flagspec.py, dashboard/launch.py).

The rebuilt parser must refuse and accept exactly what the parser it was dumped from does, with the same
error line: checked here on an argparse parser dumped by the harness's own code
(conformance.flags_worker.spec_of), and on the written specs of the executed releases (data/flags/).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from conformance.flags_worker import spec_of
from dashboard import flagspec
from dashboard.launch import check_flags, parse_command

DATA = Path(__file__).resolve().parent / "data" / "launch_commands.tsv"


#: The start of a launch command per framework, before its flags (model ``m``).
LAUNCH_HEAD = {"vllm": ["vllm", "serve", "m"], "sglang": ["python", "-m", "sglang.launch_server", "--model-path", "m"]}


def _llama_config(tmp_path: Path) -> Path:
    """A Llama-3.1-8B-shaped config.json in ``tmp_path`` (its path)."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                               "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
                               "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
                               "torch_dtype": "bfloat16"}))
    return cfg


def _engine_like() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vllm serve")
    p.add_argument("model_tag", nargs="?")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--kv-cache-dtype", choices=["auto", "fp8", "fp8_e4m3"], default="auto")
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction)
    p.add_argument("--max-model-len", type=str)
    p.add_argument("--served-model-name", nargs="+")
    return p


def _real_error(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        parser.parse_args(argv)
    return err.getvalue().strip().splitlines()[-1]


@pytest.mark.parametrize("argv", [
    ["m", "--tensor-paralel-size", "4"],
    ["m", "--kv-cache-dtype", "fp9"],
    ["m", "--tensor-parallel-size", "four"],
    ["m", "--tensor-parallel-size"],
    ["m", "--served-model-name"],
    ["m", "extra"],
    ["m", "--enable-prefix"],  # an abbreviation of two flags? no: of one (unique prefix) -> accepted? see below
])
def test_rebuilt_parser_refuses_as_the_original(argv):
    real = _engine_like()
    spec = json.loads(json.dumps(dict(spec_of(real), launchers={"vllm serve": {"prog": "vllm serve"}})))
    rebuilt = flagspec.build_parser(spec)
    try:
        real.parse_args(argv)
        real_ok = True
    except SystemExit:
        real_ok = False
    if real_ok:
        rebuilt.parse_args(argv)  # accepted by both
        return
    with pytest.raises(flagspec.EngineParseError) as e:
        rebuilt.parse_args(argv)
    assert str(e.value) == _real_error(_engine_like(), argv)


def test_boolean_flags_take_no_value_from_the_spec():
    spec = dict(spec_of(_engine_like()), launchers={"vllm serve": {"prog": "vllm serve"}})
    assert flagspec.takes_value(spec, "--trust-remote-code") is False
    assert flagspec.takes_value(spec, "--no-enable-prefix-caching") is False
    assert flagspec.takes_value(spec, "--kv-cache-dtype") is True
    assert flagspec.resolve(spec, "--tensor-parallel")["dest"] == "tensor_parallel_size"  # abbreviation


# -- the written specs of the executed releases ------------------------------------------------------

SPECS = sorted(flagspec.FLAGS_DIR.glob("*.json")) if flagspec.FLAGS_DIR.is_dir() else []
needs_vllm = pytest.mark.skipif(not flagspec.releases("vllm"), reason="no vLLM flag spec written")


def _commands():
    rows = []
    for line in DATA.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fw, url, cmd = line.split("\t")
        rows.append((fw, url, cmd))
    return rows


def test_the_file_of_real_commands_is_sourced():
    rows = _commands()
    assert len(rows) >= 20
    assert all(url.startswith(("https://", "http://")) for _, url, _ in rows)  # one page is served over http only


@pytest.mark.parametrize("fw,url,cmd", _commands())
def test_real_commands_parse_against_every_spec(fw, url, cmd):
    launch = parse_command(cmd)
    assert launch.framework == fw
    for rel in flagspec.releases(fw):
        rep = check_flags(launch, rel)
        assert rep.evidence == "executed"
        # a refusal is the engine's own line; accepted flags are every flag written
        if rep.refused:
            assert rep.error.startswith(flagspec.load(fw, rel)["launchers"].get(launch.launcher, {}).get(
                "prog", flagspec.load(fw, rel)["prog"]))
        else:
            assert len(rep.accepted) == sum(1 for t in launch.tokens[launch.start:] if t.startswith("-"))


ALL_SPECS = [(fw, rel) for fw in ("vllm", "sglang") for rel in flagspec.releases(fw)]


@pytest.mark.parametrize("fw,rel", ALL_SPECS)
def test_probes_match_the_rebuilt_parser(fw, rel):
    """Each probe's error line, printed by the release's real CLI, is what the rebuilt parser prints."""
    spec = flagspec.load(fw, rel)
    assert spec["evidence"] == "executed" and spec["probes"]
    for pr in spec["probes"]:
        rep = flagspec.check(fw, rel, pr.get("args", pr["argv"]))
        if pr["exit_status"] == 2:  # argparse refused it
            assert rep.error == pr["stderr_last_line"], pr
        else:  # the real parser took it (it failed later, loading the model): so does the rebuilt one
            assert not rep.refused, pr


@pytest.mark.parametrize("fw,rel", ALL_SPECS)
def test_a_typo_and_a_bad_choice_exit_1_with_the_engines_message(fw, rel, tmp_path):
    """tp-planner check on a command with a misspelled flag / a bad choice: exit 1, the engine's own
    line (the probe's), a suggestion."""
    from dashboard.check.cli import main

    spec = flagspec.load(fw, rel)
    cfg = _llama_config(tmp_path)
    head = LAUNCH_HEAD
    flag = next(f for f in spec["flags"] if "--tensor-parallel-size" in f["option_strings"])
    typo = "--tensor-paralel-size"
    chosen = next(f for f in sorted(spec["flags"], key=lambda f: f["option_strings"] != ["--kv-cache-dtype"])
                  if f["takes_value"] and f["choices"] and f["option_strings"][0].startswith("--"))
    for bad, want in ((["--tensor-paralel-size", "4"], "unrecognized arguments: --tensor-paralel-size 4"),
                      ([chosen["option_strings"][0], "fp9"], "invalid choice: 'fp9'")):
        out, err = io.StringIO(), io.StringIO()
        rc = main(["--config", str(cfg), "--version", rel, "--json", "--", *head[fw], *bad], stdout=out, stderr=err)
        doc = json.loads(out.getvalue())
        assert rc == 1 and doc["exit_status"] == 1, err.getvalue()
        lf = doc["launch_flags"]
        prog = spec.get("unrecognized_prog", spec["prog"]) if bad[0] == typo else spec["prog"]
        assert lf["refused"] and want in lf["error"] and lf["error"].startswith(prog + ": error:")
        assert doc["first_error"]["message"] == lf["error"] and doc["first_error"]["kind"] == "flags"
        assert "own argparse message" in doc["first_error"]["condition"]
        if bad[0] == typo:
            assert set(lf["did_you_mean"]) & set(flag["option_strings"])
        out = io.StringIO()
        assert main(["--config", str(cfg), "--version", rel, "--", *head[fw], *bad], stdout=out, stderr=err) == 1
        assert lf["error"] in out.getvalue() and "REFUSED" in out.getvalue()


@needs_vllm
def test_typo_is_refused_with_the_engines_message_and_a_suggestion():
    rel = flagspec.releases("vllm")[-1]
    launch = parse_command("vllm serve Qwen/Qwen3-30B-A3B --tensor-paralel-size 4")
    rep = check_flags(launch, rel)
    assert rep.error.endswith("error: unrecognized arguments: --tensor-paralel-size 4") or \
        "unrecognized arguments: --tensor-paralel-size" in rep.error
    assert "--tensor-parallel-size" in rep.suggestions


@needs_vllm
def test_trust_remote_code_does_not_swallow_the_next_token():
    launch = parse_command("vllm serve m --trust-remote-code -tp 2")
    assert launch.tp == 2 and "--trust-remote-code" in launch.unmodeled


PAIRS = [(fw, a, b) for fw in ("vllm", "sglang") for a in flagspec.releases(fw) for b in flagspec.releases(fw)
         if a != b]


@pytest.mark.parametrize("fw,old,new", PAIRS)
def test_a_flag_removed_between_releases_is_refused_and_named(fw, old, new):
    """A spelling the older (or newer) release's parser takes and this one's does not: refused by this
    release with the engine's line, and the release that takes it named."""
    a, b = flagspec.load(fw, old), flagspec.load(fw, new)
    gone = sorted(s for s in set(flagspec.spellings(a)) - set(flagspec.spellings(b))
                  if s.startswith("--") and flagspec.resolve(b, s) is None)
    if not gone:
        pytest.skip(f"{fw} {old} and {new} take the same long spellings")
    flag = gone[0]
    entry = flagspec.resolve(a, flag)
    args = ["--model-path", "m"] if "--model-path" in flagspec.spellings(b) else []
    args += [flag] + (["1"] if entry["takes_value"] else [])
    rep = flagspec.check(fw, new, args)
    assert rep.refused and "unrecognized arguments: " + flag in rep.error
    assert any(f"accepted by {fw} {old}" in h for h in rep.history)


# -- every launch command the README and docs/ show ------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
_LAUNCHER = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:vllm serve\b|python[0-9.]* -m (?:vllm|sglang)\.\S+"
                       r"|sglang serve\b|trtllm-serve\b)")
#: Commands the docs show on purpose as refused by the engine's parser (a typo example): fragment of the
#: command -> fragment of the engine's own error line.
DOC_REFUSED = {"--tensor-paralel-size": "unrecognized arguments: --tensor-paralel-size"}


def doc_commands() -> list[tuple[str, int, str, str | None]]:
    """(file, line, command, release named by ``--version``) for each launch command inside a code block of
    README.md and docs/**/*.md: a line that starts with the launcher, the part after ``tp-planner check ...
    --``, and the corrected commands a console example prints (``same 6 GPUs: vllm serve ...``);
    backslash continuations joined."""
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        lines = path.read_text().splitlines()
        in_code, i = False, 0
        while i < len(lines):
            line, no = lines[i], i + 1
            i += 1
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            if not in_code:
                continue
            while line.endswith("\\") and i < len(lines):
                line = line[:-1] + " " + lines[i].strip()
                i += 1
            body, version = line.strip(), None
            if body.startswith("$ "):
                body = body[2:]
            if body.startswith("tp-planner check"):
                head, sep, rest = body.partition(" -- ")
                if not sep:
                    continue
                m = re.search(r"--version[ =](\S+)", head)
                version = m and m.group(1)
                body = rest
            m = _LAUNCHER.search(body)
            if not m or (m.start() and not body[:m.start()].rstrip().endswith(":")):
                continue  # prose mentioning a launcher, not a command
            cmd = body[m.start():].split(";")[0].strip()
            out.append((path.relative_to(ROOT).as_posix(), no, cmd, version))
    return out


def test_the_docs_show_launch_commands():
    cmds = doc_commands()
    assert len(cmds) >= 10, cmds  # the README shows 10 today
    assert any(frag in c for _, _, c, _ in cmds for frag in DOC_REFUSED)  # and one refused on purpose
    assert {parse_command(c).framework for _, _, c, _ in cmds} >= {"vllm", "sglang"}


@pytest.mark.parametrize("where,line,cmd,version", doc_commands(), ids=lambda v: str(v)[:60])
def test_every_command_in_the_docs_parses_as_the_engine_would(where, line, cmd, version):
    """Each command of the README / docs parses against the flag spec of the release it names (else the
    newest executed one, check's default) with no refusal, except the ones shown as refused on purpose,
    which are refused with the engine's own line."""
    from dashboard import frameworks

    launch = parse_command(cmd)
    fwo = frameworks.get(launch.framework)
    rel = version or (fwo.executed_releases[-1] if fwo.executed_releases else None)
    rep = check_flags(launch, rel)
    want = next((err for frag, err in DOC_REFUSED.items() if frag in cmd), None)
    if want:
        assert rep.refused and want in rep.error, (where, line, rep.error)
        return
    assert not rep.refused, f"{where}:{line}: {rep.error}"
    if fwo.flag_spec_releases():
        assert rep.evidence == "executed"
        assert len(rep.accepted) == sum(1 for t in launch.tokens[launch.start:] if t.startswith("-"))


REFUSED_DATA = Path(__file__).resolve().parent / "data" / "launch_commands_refused.tsv"


def _refused_commands():
    rows = []
    for line in REFUSED_DATA.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fw, rel, err, why, url, cmd = line.split("\t")
        rows.append((fw, rel, err, why, url, cmd))
    return rows


def test_at_least_33_real_commands_with_their_sources():
    rows = _commands() + [(fw, url, cmd) for fw, _, _, _, url, cmd in _refused_commands()]
    assert len(rows) >= 33
    assert len({(url, cmd) for _, url, cmd in rows}) == len(rows)  # no row twice (one command may have two sources)
    assert {fw for fw, _, _ in rows} >= {"vllm", "sglang"}
    assert all(url.startswith(("https://", "http://")) for _, url, _ in rows)


@pytest.mark.parametrize("fw,url,cmd", _commands())
def test_real_commands_start_on_the_newest_executed_release(fw, url, cmd):
    """Each real command parses with no refusal on the newest executed release's own parser (the ones
    that use a flag it removed or renamed are in launch_commands_refused.tsv)."""
    from dashboard import frameworks

    rel = frameworks.get(fw).executed_releases[-1]
    rep = check_flags(parse_command(cmd), rel)
    assert rep.evidence == "executed" and not rep.refused, rep.error


@pytest.mark.parametrize("fw,rel,err,why,url,cmd", _refused_commands())
def test_real_commands_with_a_removed_flag_are_refused_with_the_engines_line(fw, rel, err, why, url, cmd):
    spec = flagspec.load(fw, rel)
    assert spec is not None and why.startswith(("removed:", "renamed:"))
    rep = check_flags(parse_command(cmd), rel)
    prog = spec.get("unrecognized_prog", spec["prog"]) if "unrecognized arguments" in err else spec["prog"]
    assert rep.refused and err in rep.error and rep.error.startswith(prog + ": error: "), rep.error
    named = set(re.findall(r"--[a-z0-9][a-z0-9\-]*", why))
    assert named & set(flagspec.spellings(spec))  # the reason names the spelling this release takes


@pytest.mark.parametrize("fw,rel", ALL_SPECS)
def test_a_flag_refusal_says_the_layout_was_not_judged(fw, rel, tmp_path):
    """Refused by the engine's argument parser: the command never starts, so the text output says the
    layout was not judged (and offers no layouts nearby) instead of "No valid layout found nearby."."""
    from dashboard import frameworks
    from dashboard.check.cli import main
    from dashboard.check.text import render_text

    cfg = _llama_config(tmp_path)
    head = LAUNCH_HEAD
    argv = ["--config", str(cfg), "--version", rel, "--", *head[fw], "--tensor-paralel-size", "4"]
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, stdout=out, stderr=err) == 1
    text = out.getvalue().rstrip()
    label = frameworks.get(fw).label
    assert f"Layout not judged: {label} {rel} stops at argument parsing." in text
    assert "No valid layout found nearby." not in text and "Nearest valid layouts" not in text
    assert not text.endswith("No valid layout found nearby.")
    # the "did you mean" line is our suggestion (difflib over the spec's spellings), never the engine's
    dym = [ln for ln in text.splitlines() if "did you mean" in ln]
    assert dym and all("(our suggestion" in ln for ln in dym), dym
    # the same document without the flag refusal (a refused layout, nothing nearby) keeps the old line
    out = io.StringIO()
    assert main(["--json", *argv], stdout=out, stderr=err) == 1
    doc = json.loads(out.getvalue())
    doc["launch_flags"]["refused"] = False
    doc["alternatives"] = []
    other = render_text(doc)
    assert "No valid layout found nearby." in other and "Layout not judged" not in other


@pytest.mark.parametrize("fw,rel", ALL_SPECS)
def test_a_flag_refusal_is_the_parsers_answer_not_an_executed_layout(fw, rel):
    """A catalog model whose cell at tp=1 is a row of the executed table: refused by the parser, the
    answer must not claim that run (the typo'd flag was never read, so tp=1 is not the user's layout)."""
    from dashboard.check.cli import main

    head = {"vllm": ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"],
            "sglang": ["python", "-m", "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-70B-Instruct"]}
    argv = ["--version", rel, "--", *head[fw], "--tensor-paralel-size", "4"]
    out, err = io.StringIO(), io.StringIO()
    assert main(["--json", *argv], stdout=out, stderr=err) == 1
    doc = json.loads(out.getvalue())
    assert doc["executed"] is False and doc["evidence"] == "parser"
    assert "argument parser refuses the command" in doc["evidence_text"] and "not judged" in doc["evidence_text"]
    assert "reproduced by running" not in doc["evidence_text"]
    out = io.StringIO()
    assert main(argv, stdout=out, stderr=err) == 1
    text = out.getvalue()
    first = text.splitlines()[0]
    assert "tp=1" not in first and "does not start" in first
    assert "reproduced by running" not in text
