"""Read a real serving launch command: which framework, which model, which parallel layout.

Pure (no I/O). Understands::

    vllm serve MODEL [flags]                                   (also --model MODEL)
    python -m vllm.entrypoints.openai.api_server --model MODEL [flags]
    python -m sglang.launch_server --model-path MODEL [flags]  (also sglang serve ...)
    trtllm-serve [serve] MODEL [flags]

with leading ``VAR=value`` environment assignments, any ``python``/``python3.x`` interpreter path,
shell quoting (:func:`shlex.split`), backslash line continuations and ``--flag=value``. Each tool's
spellings of the flags the planner models are listed in :data:`FLAGS` (vLLM also takes ``_`` for ``-``
in long flags, as its ``FlexibleArgumentParser`` does). Which flags take a value, and which
abbreviations select a flag, come from the release's flag spec (:mod:`dashboard.flagspec`, written by
the release's own parser). Every flag the planner does not model is kept in :attr:`Launch.unmodeled`;
:func:`check_flags` asks the release's rebuilt parser whether the engine accepts the command at all
(an unknown flag, a bad choice, a missing value: the engine's own error line).

:func:`parse_command` returns a :class:`Launch`; :meth:`Launch.command_with` rewrites the command with
another layout (the corrected commands of ``tp-planner check``); :func:`render_command` writes a fresh
command for a framework from a layout. Bad input raises :class:`LaunchError` with a one-line reason.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any, Sequence

from dashboard import flagspec, frameworks
from dashboard.terminal import safe_text as _safe

__all__ = ["FLAGS", "Launch", "LaunchError", "MODEL_PLACEHOLDER", "command_model", "gpu_sets", "hub_id",
           "hub_id_from_config", "instance_count", "parse_command", "render_command", "render_commands", "parse_len",
           "MAX_GPUS", "check_flags"]

#: Largest parallel size (and GPU count) the check command accepts.
MAX_GPUS = 4096
#: Longest command accepted (characters).
MAX_COMMAND_CHARS = 64 * 1024


class LaunchError(ValueError):
    """The command cannot be read (unknown launcher, a flag without its value, a bad number)."""


# key -> kind: int (parallel size), float (fraction), len (token count), str, bool, model
_KINDS = {
    "tp": "int", "pp": "int", "dp": "int", "ep": "int", "attn_dp": "int",
    "expert_parallel": "bool", "no_expert_parallel": "bool", "dp_attention": "bool", "vision_dp": "bool",
    "mem_fraction": "float", "kv_cache_dtype": "str", "max_model_len": "len", "mm_encoder_tp_mode": "str",
    "quantization": "str", "model": "model", "backend": "str",
}

#: The flags the planner models, per framework: key -> spellings (first = the one corrected commands use);
#: each framework's own :attr:`~dashboard.frameworks.base.Framework.launch_flags`.
FLAGS: dict[str, dict[str, tuple[str, ...]]] = {
    fw.name: fw.launch_flags for fw in frameworks.all_frameworks() if fw.launch_flags}

_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_LEN = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kKmMgG]?)$")


def parse_len(text: str, name: str = "--max-model-len") -> int:
    """A token count as vLLM's ``human_readable_int`` reads it: ``32768``, ``32k`` (x1000), ``32K``
    (x1024), ``1m``/``1M``, ``1g``/``1G``. Raises :class:`LaunchError` otherwise (or outside 1 .. 2**40)."""
    m = _LEN.match(str(text).strip())
    if not m:
        raise LaunchError(f"{name} must be a whole number of tokens (e.g. 32768 or 32k), got {_show(text)}")
    num, unit = m.groups()
    mult = {"": 1, "k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2, "g": 1000**3, "G": 1024**3}[unit]
    val = float(num) * mult
    if not val.is_integer() or not 1 <= val <= 1 << 40:
        raise LaunchError(f"{name} must be a whole number of tokens in 1..2^40, got {_show(text)}")
    return int(val)


def parse_size(text: Any, name: str) -> int:
    """A parallel size in ``1 .. MAX_GPUS`` from a flag value (LaunchError otherwise)."""
    from dashboard.sharding import whole_number

    v = whole_number(text)  # ASCII digits only: not "1_6", not "٨" (the CLI's one number reader)
    if v is None or not 1 <= v <= MAX_GPUS:
        raise LaunchError(f"{name} must be a whole number in 1..{MAX_GPUS}, got {_show(text)}")
    return v


def parse_fraction(text: Any, name: str) -> float:
    try:
        f = float(str(text).strip())
    except ValueError:
        f = float("nan")
    if not 0.0 < f <= 1.0:
        raise LaunchError(f"{name} must be a number in (0, 1], got {_show(text)}")
    return f


def _show(text: Any, n: int = 40) -> str:
    s = _safe(text)
    return repr(s if len(s) <= n else s[:n] + "...")


@dataclass
class Launch:
    """What a launch command asks for. ``None`` = the flag is absent (the framework's default applies)."""

    framework: str
    tokens: list[str]
    start: int  # index of the first argument after the launcher (``vllm serve`` ...)
    model: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    attn_dp: int | None = None
    expert_parallel: bool = False
    dp_attention: bool = False
    vision_dp: bool = False
    mem_fraction: float | None = None
    kv_cache_dtype: str | None = None
    max_model_len: int | None = None
    quantization: str | None = None
    backend: str | None = None
    #: flag (as written) -> index of its token, for the flags the planner models
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    #: flags the planner does not model, as written (warned about, never a failure)
    unmodeled: list[str] = field(default_factory=list)
    #: notes on how the command was read (deprecated spellings, ignored values)
    notes: list[str] = field(default_factory=list)
    #: the launcher as written (``vllm serve``, ``python -m sglang.launch_server`` ...)
    launcher: str = ""
    #: release whose flag spec split the arguments (None: no spec, values guessed from the next token)
    spec_release: str | None = None

    # -- the layout for the rules engine ---------------------------------------------------------
    def layout(self) -> dict[str, Any]:
        """``tp, pp, dp, ep, dp_attention, expert_parallel, vision_dp`` for :func:`dashboard.rules.check`."""
        return frameworks.get(self.framework).launch_layout(self)

    # -- rewriting -------------------------------------------------------------------------------
    def command_with(self, *, version: str | None = None, **layout: Any) -> str:
        """This command with another layout (keys of :meth:`layout`, plus ``max_model_len``): the flags the
        planner models are removed and written again in the tool's own spelling; every other token stays."""
        drop: set[int] = set()
        for key in ("tp", "pp", "dp", "ep", "attn_dp", "expert_parallel", "no_expert_parallel", "dp_attention",
                    "vision_dp", "mm_encoder_tp_mode"):
            if key == "vision_dp" or key == "mm_encoder_tp_mode":
                if "vision_dp" not in layout:
                    continue
            for a, b in self.spans.get(key, []):
                drop.update(range(a, b))
        if "max_model_len" in layout:
            for a, b in self.spans.get("max_model_len", []):
                drop.update(range(a, b))
        kept = [t for i, t in enumerate(self.tokens) if i not in drop]
        full = dict(self.layout(), **{k: v for k, v in layout.items() if k != "max_model_len"})
        extra = _layout_flags(self.framework, full, version=version, keep_vision="vision_dp" in layout,
                              replicas=self._replicas())
        if "max_model_len" in layout and layout["max_model_len"]:
            extra += [FLAGS[self.framework]["max_model_len"][0], str(int(layout["max_model_len"]))]
        return _join(kept + extra)

    def commands_with(self, *, version: str | None = None, **layout: Any) -> list[dict[str, Any]]:
        """:meth:`command_with` as one command per server process: a framework without a data-parallel
        flag (``trtllm-serve``) runs each replica of ``layout`` as its own instance, so a layout of
        :func:`instance_count` > 1 gets one command each, ``CUDA_VISIBLE_DEVICES`` set to its GPUs and
        ``--port`` counted up from the command's own (default 8000). Returns ``[{"instance", "gpus",
        "command"}]`` (``gpus``: device indices on one machine, None for a single instance)."""
        one = self.command_with(version=version, **layout)
        full = dict(self.layout(), **{k: v for k, v in layout.items() if k != "max_model_len"})
        count, per = instance_count(self.framework, full)
        if count == 1:
            return [dict(instance=0, gpus=None, command=one)]
        toks = _split(one)
        head = 0
        while head < len(toks) and _ENV.match(toks[head]):
            head += 1
        env = [t for t in toks[:head] if not t.startswith("CUDA_VISIBLE_DEVICES=")]
        rest = toks[head:]
        port, at = 8000, None
        for i, t in enumerate(rest):
            if t == "--port" and i + 1 < len(rest) and rest[i + 1].isdigit():
                port, at = int(rest[i + 1]), (i, i + 2)
            elif t.startswith("--port=") and t[7:].isdigit():
                port, at = int(t[7:]), (i, i + 1)
        if at is not None:
            rest = rest[:at[0]] + rest[at[1]:]
        return [dict(instance=k, gpus=list(g), command=_join(
            [f"CUDA_VISIBLE_DEVICES={','.join(map(str, g))}", *env, *rest, "--port", str(port + k)]))
            for k, (_, g) in enumerate(gpu_sets(count, per))]

    def _replicas(self) -> int:
        """Whole replicas kept as written next to attention-DP (SGLang ``--dp-size`` next to
        ``--attn-dp-size``, 0.5.22+)."""
        return frameworks.get(self.framework).launch_replicas(self)


def _join(tokens: Sequence[str]) -> str:
    return " ".join(shlex.quote(t) for t in tokens)


def _layout_flags(framework: str, lay: dict[str, Any], *, version: str | None = None, keep_vision: bool = False,
                  replicas: int = 1) -> list[str]:
    """The flags that spell ``lay`` for ``framework`` (defaults left out)."""
    return frameworks.get(framework).layout_flags(lay, version=version, keep_vision=keep_vision, replicas=replicas)


#: The model argument of a command written for a config whose Hub id is unknown (replace it before running).
MODEL_PLACEHOLDER = "<MODEL-PATH>"
#: The note that goes with :data:`MODEL_PLACEHOLDER`.
PLACEHOLDER_NOTE = (f"no Hub id is known for this config: the commands name the model {MODEL_PLACEHOLDER}; "
                    "replace it with the model's Hub id or its local folder")
#: The org of an uploaded config's id in the dashboard (``(upload)/org--name``).
UPLOAD_ORG = "(upload)"

# a Hugging Face repo id: org/name of [A-Za-z0-9._-], neither part starting with '.' or '-', no '--' or '..'
_HUB_ID = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_FLAT_ID = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*?)--([A-Za-z0-9][A-Za-z0-9._-]*)$")


def hub_id(text: Any) -> str | None:
    """``text`` as a Hub repo id ``org/name`` when it is one; a flattened file stem ``org--name`` (the
    shipped configs' file names, ``../shared/hub-configs/<org>--<name>.json``) mapped back to ``org/name``;
    None otherwise (a bare name, a path, an upload without an org)."""
    t = str(text or "").strip()
    if t.startswith(UPLOAD_ORG + "/"):
        t = t[len(UPLOAD_ORG) + 1:]
    if _HUB_ID.match(t):
        return t
    m = _FLAT_ID.match(t)
    if m and "--" not in m.group(2) and _HUB_ID.match(f"{m.group(1)}/{m.group(2)}"):
        return f"{m.group(1)}/{m.group(2)}"
    return None


def hub_id_from_config(raw: Any) -> str | None:
    """The Hub id a config.json names in ``_name_or_path`` (transformers writes the repo id or the folder
    it saved from) when that looks like ``org/name`` (:func:`hub_id`); None otherwise. ``raw``: the JSON
    text / bytes, or the parsed dict."""
    import json

    cfg = raw
    if isinstance(raw, (bytes, str)):
        try:
            cfg = json.loads(raw)
        except (ValueError, RecursionError, TypeError):
            return None
    nop = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
    if not isinstance(nop, str) or nop.strip().startswith(("/", ".", "~")) or "\\" in nop:
        return None
    return hub_id(nop.strip().rstrip("/"))


def command_model(model_id: Any, *, kind: str | None = None, where: str | None = None) -> tuple[str, str]:
    """(the model argument to write in a launch command, a note or ''). The Hub id when ``model_id`` is
    one or maps back to one (:func:`hub_id`: ``org/name``, ``org--name``, ``(upload)/org--name``); the
    folder for a config read from a model folder (``kind`` ``"folder"``, or a ``config.json`` file:
    ``where`` is its path); else :data:`MODEL_PLACEHOLDER` with :data:`PLACEHOLDER_NOTE`."""
    hid = hub_id(model_id)
    if hid:
        return hid, ""
    if kind == "folder" and where:
        return where, ""
    if kind == "file" and where and PurePath(where).name == "config.json":
        return str(PurePath(where).parent), ""
    return MODEL_PLACEHOLDER, PLACEHOLDER_NOTE


def instance_count(framework: str, lay: Any) -> tuple[int, int]:
    """(server processes, GPUs each) that layout ``lay`` needs under ``framework``: its replicas when the
    framework's server has no data-parallel flag (TensorRT-LLM's ``trtllm-serve``: ``dp`` replicas of
    ``tp x pp`` GPUs, attention-DP inside the TP group adds none), else one process on every GPU."""
    fw = frameworks.get(framework)
    if isinstance(lay, frameworks.Layout):
        lay = lay.as_dict()
    per = int(lay.get("tp") or 1) * int(lay.get("pp") or 1)
    gpus = fw.gpu_count(dict(lay, tp=int(lay.get("tp") or 1), pp=int(lay.get("pp") or 1),
                             dp=int(lay.get("dp") or 1)))
    if fw.launch_head("MODEL") is None or "dp" in fw.launch_flags or gpus <= per:
        return 1, gpus
    return gpus // per, per


def gpu_sets(count: int, per: int, gpus_per_node: int | None = None) -> list[tuple[int, tuple[int, ...]]]:
    """(node, local device indices) of ``count`` instances of ``per`` GPUs each, filling each node of
    ``gpus_per_node`` GPUs in order (one machine when None). An instance larger than a node gets the
    devices of its first node (it spans ``ceil(per / gpus_per_node)`` nodes)."""
    out = []
    if gpus_per_node is None or per > gpus_per_node:
        span = 1 if gpus_per_node is None else -(-per // gpus_per_node)
        for k in range(count):
            local = per if gpus_per_node is None else gpus_per_node
            base = k * per if gpus_per_node is None else 0
            out.append((k * span, tuple(range(base, base + local))))
        return out
    per_node = max(1, gpus_per_node // per)
    for k in range(count):
        node, slot = divmod(k, per_node)
        out.append((node, tuple(range(slot * per, slot * per + per))))
    return out


def render_commands(framework: str, model: str, lay: dict[str, Any], *, version: str | None = None,
                    max_model_len: int | None = None, extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    """:func:`render_command` as one command per server process (see :meth:`Launch.commands_with`):
    ``[{"instance", "gpus", "command"}]``."""
    one = render_command(framework, model, lay, version=version, max_model_len=max_model_len, extra=extra)
    count, per = instance_count(framework, lay)
    if count == 1:
        return [dict(instance=0, gpus=None, command=one)]
    return parse_command(one).commands_with(version=version, **_as_layout(lay))


def _as_layout(lay: Any) -> dict[str, Any]:
    if isinstance(lay, frameworks.Layout):
        lay = lay.as_dict()
    return {k: lay[k] for k in ("tp", "pp", "dp", "ep", "dp_attention", "expert_parallel") if k in lay}


def render_command(framework: str, model: str, lay: dict[str, Any], *, version: str | None = None,
                   max_model_len: int | None = None, extra: Sequence[str] = ()) -> str:
    """A launch command for ``framework`` serving ``model`` at layout ``lay``; frameworks without a
    server command (transformers, Megatron-Core) get the equivalent ``tp-planner check`` flags. ``lay``: a
    :class:`dashboard.frameworks.Layout` or a dict of its fields."""
    if isinstance(lay, frameworks.Layout):
        lay = lay.as_dict()
    flags = _layout_flags(framework, lay, version=version, keep_vision=True)
    head = frameworks.get(framework).launch_head(model)
    if head is None:
        head = ["tp-planner", "check", model, "--framework", framework]
        flags = ["--tp", str(int(lay.get("tp") or 1))]
        for k in ("pp", "dp", "ep"):
            if int(lay.get(k) or 1) > 1:
                flags += [f"--{k}", str(int(lay[k]))]
        if lay.get("dp_attention"):
            flags.append("--dp-attention")
    own = frameworks.get(framework).launch_flags
    if max_model_len and own:
        flags += [own["max_model_len"][0], str(int(max_model_len))]
    elif max_model_len:
        flags += ["--max-model-len", str(int(max_model_len))]
    return _join([*head, *flags, *extra])


# ------------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------------


def _split(command: str | Sequence[str]) -> list[str]:
    if isinstance(command, str):
        text = command
    else:
        toks = [str(t) for t in command]
        if len(toks) == 1 and (" " in toks[0] or "\n" in toks[0] or "\t" in toks[0]):
            text = toks[0]  # the whole command pasted as one quoted argument
        else:
            if sum(len(t) for t in toks) > MAX_COMMAND_CHARS:
                raise LaunchError(f"launch command longer than {MAX_COMMAND_CHARS} characters")
            return toks
    if len(text) > MAX_COMMAND_CHARS:
        raise LaunchError(f"launch command longer than {MAX_COMMAND_CHARS} characters")
    text = re.sub(r"\\\r?\n", " ", text)  # backslash line continuations
    try:
        return shlex.split(text, comments=True)
    except ValueError as e:  # "No closing quotation", "No escaped character"
        raise LaunchError(f"cannot split the launch command as a shell would: {e}") from None


def _launcher(tokens: list[str]) -> tuple[str, int, str]:
    """(framework, index of the first argument, launcher key) from the head of the command."""
    i = 0
    while i < len(tokens) and _ENV.match(tokens[i]):
        i += 1
    if i < len(tokens) and PurePath(tokens[i]).name == "env":  # env VAR=x vllm serve ...
        i += 1
        while i < len(tokens) and _ENV.match(tokens[i]):
            i += 1
    if i >= len(tokens):
        raise LaunchError("empty launch command")
    prog = PurePath(tokens[i]).name
    nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
    if prog == "vllm":
        if nxt != "serve":
            raise LaunchError(f"only 'vllm serve' is understood, got 'vllm {_show(nxt)[1:-1]}'")
        return "vllm", i + 2, "vllm serve"
    if prog == "sglang" and nxt == "serve":
        return "sglang", i + 2, "sglang serve"
    if prog == "trtllm-serve":
        return "tensorrt-llm", i + 2 if nxt == "serve" else i + 1, "trtllm-serve"
    if re.fullmatch(r"python[0-9.]*", prog) or prog in ("uv", "uvx"):
        j = i + 1
        while j < len(tokens) and tokens[j] != "-m":
            j += 1
        mod = tokens[j + 1] if j + 1 < len(tokens) else ""
        if mod in ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server"):
            return "vllm", j + 2, f"python -m {mod}"
        if mod == "sglang.launch_server":
            return "sglang", j + 2, "python -m sglang.launch_server"
        if mod:
            raise LaunchError(f"unknown server module {_show(mod)}; expected vllm.entrypoints.openai.api_server "
                              "or sglang.launch_server")
    raise LaunchError(f"unknown launcher {_show(tokens[i])}; expected 'vllm serve', "
                      "'python -m vllm.entrypoints.openai.api_server', 'python -m sglang.launch_server' "
                      "or 'trtllm-serve'")


def _lookup(framework: str) -> dict[str, str]:
    return {spelling: key for key, spells in FLAGS[framework].items() for spelling in spells}


def _split_spec(fwo: Any, release: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The flag spec that splits a command's arguments: ``release``'s, else the newest spec of the
    framework (only which flags take a value; :func:`check_flags` judges against ``release``'s own)."""
    spec = fwo.flag_spec(release) if release else None
    if spec is None:
        have = fwo.flag_spec_releases()
        if have:
            release = have[-1]
            spec = fwo.flag_spec(release)
    return spec, (release if spec is not None else None)


def _modelled_key(names: dict[str, str], spec: dict[str, Any] | None, look: str) -> str | None:
    """The planner's key of a flag name: a listed spelling, or (through the spec) an abbreviation or
    alias of one, as argparse resolves it."""
    key = names.get(look)
    if key is None and spec is not None:
        entry = flagspec.resolve(spec, look)
        if entry is not None:
            key = next((names[o] for o in entry["option_strings"] if o in names), None)
    return key


def parse_command(command: str | Sequence[str], release: str | None = None) -> Launch:
    """Read a launch command (a string, or tokens as the shell split them); ``release``: the framework
    release whose flag spec tells which flags take a value (default: the newest with a spec). Raises
    :class:`LaunchError`."""
    tokens = _split(command)
    if any("\x00" in t for t in tokens):
        raise LaunchError("launch command contains a NUL character")
    fw, start, launcher = _launcher(tokens)
    fwo = frameworks.get(fw)
    names = _lookup(fw)
    spec, spec_release = _split_spec(fwo, release)
    out = Launch(framework=fw, tokens=tokens, start=start, launcher=launcher, spec_release=spec_release)
    positional: list[tuple[int, str]] = []
    i = start
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("-") or tok == "-" or re.fullmatch(r"-[0-9.]+", tok):
            positional.append((i, tok))
            i += 1
            continue
        name, eq, inline = tok.partition("=")
        look = name
        if fwo.flag_underscores and name.startswith("--"):
            look = "--" + name[2:].replace("_", "-")
        key = _modelled_key(names, spec, look)
        if key is None:
            wants = flagspec.takes_value(spec, flagspec.normalise(spec, name))  # None: the spec does not know it
            takes_value = not eq and wants is not False and i + 1 < len(tokens) and (
                not tokens[i + 1].startswith("-") or re.fullmatch(r"-[0-9.]+", tokens[i + 1]) is not None)
            out.unmodeled.append(_safe(name)[:60])
            i += 2 if takes_value else 1
            continue
        kind = _KINDS[key]
        if kind == "bool":
            end = i + 1
            if eq:  # --enable-expert-parallel=true (argparse would refuse a value; be lenient)
                val = inline.strip().lower() not in ("0", "false", "no", "off")
            else:
                val = True
            if key == "no_expert_parallel":
                out.expert_parallel = False
            else:
                setattr(out, key, val)
        else:
            if eq:
                value, end = inline, i + 1
            elif i + 1 < len(tokens):
                value, end = tokens[i + 1], i + 2
            else:
                raise LaunchError(f"{_show(name)[1:-1]} needs a value")
            if kind == "int":
                setattr(out, key, parse_size(value, name))
            elif kind == "float":
                out.mem_fraction = parse_fraction(value, name)
            elif kind == "len":
                if value.strip() in ("-1", "auto"):
                    out.notes.append(f"{name} {value.strip()} (fit to memory) is not modeled: the model's "
                                     "context length is used")
                else:
                    out.max_model_len = parse_len(value, name)
            elif kind == "model":
                out.model = value
            elif key == "mm_encoder_tp_mode":
                mode = value.strip().lower()
                if mode not in ("data", "weights"):
                    raise LaunchError(f"{name} must be 'data' or 'weights', got {_show(value)}")
                out.vision_dp = mode == "data"
            elif key in ("kv_cache_dtype", "quantization", "backend"):
                v = value.strip()
                if not re.fullmatch(r"[A-Za-z0-9_.\-]{1,40}", v):
                    raise LaunchError(f"{name}: not a {key.replace('_', ' ')} name: {_show(value)}")
                setattr(out, key, v)
        out.spans.setdefault(key, []).append((i, end))
        i = end
    # the MODEL positional: vllm serve MODEL / trtllm-serve MODEL (first positional)
    if fwo.positional_model and positional:
        idx, tok = positional[0]
        if out.model is None:
            out.model = tok
        elif tok != out.model:
            out.notes.append(f"positional {_show(tok)} and --model {_show(out.model)}: the positional is used")
            out.model = tok
        positional = positional[1:]
    for _, tok in positional:
        out.notes.append(f"stray argument {_show(tok)} ignored")
    out.notes += fwo.launch_notes(out)
    if out.model is not None and (not out.model.strip() or len(out.model) > 1024):
        raise LaunchError("the command's MODEL is empty or longer than 1024 characters")
    return out


def check_flags(launch: Launch, release: str | None) -> "flagspec.FlagReport":
    """The launch command's arguments parsed by ``release``'s rebuilt parser (:func:`dashboard.flagspec.check`):
    the engine's own error line when it refuses them; evidence ``"not checked"`` when ``release`` has no
    spec."""
    fwo = frameworks.get(launch.framework)
    # trtllm-serve serve MODEL vs trtllm-serve MODEL: click's group parses options before a subcommand
    sub = launch.start >= 2 and launch.tokens[launch.start - 1] == "serve" and \
        PurePath(launch.tokens[launch.start - 2]).name == launch.launcher
    return flagspec.check(fwo.flag_spec_name or fwo.name, release, launch.tokens[launch.start:],
                          launcher=launch.launcher, label=fwo.label, subcommand_written=sub)


def with_layout(launch: Launch, **kw: Any) -> Launch:
    """A copy of ``launch`` with fields replaced (used when tp-planner's own flags override the command)."""
    return replace(launch, **kw)
