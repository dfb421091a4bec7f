"""Server load test without browsers: many sessions of ``panel serve dashboard`` driven over the Bokeh
websocket protocol, each making control changes, with the server's resident memory before, during and after.

What one run does (per allocator, ``--allocator default|malloc|both``)
--------------------------------------------------------------------
1. Starts ``panel serve dashboard`` (this interpreter, this checkout on ``PYTHONPATH``) on a free 127.0.0.1
   port, in its own process group, with ``PYTHONMALLOC=malloc`` or without it (CPython's default
   ``pymalloc``), ``--check-unused-sessions 1000 --unused-session-lifetime 4000`` (a closed session is
   discarded ~5 s after its websocket goes away) and waits until it answers.
2. Warm-up: one session opens, makes the same changes the load makes, closes; once the server has
   discarded it and settled, its RSS is the **warm baseline**.
3. ``--sessions`` N sessions open at once (``--connect-concurrency`` at a time). A session is what a
   browser does, minus the drawing: ``GET /dashboard`` (Bokeh builds the document; the page carries the
   session token), websocket ``/dashboard/ws`` with the token as sub-protocol, ``PULL-DOC-REQ`` ->
   ``PULL-DOC-REPLY`` (**time to first document** = from the ``GET`` to the whole reply), then the
   ``document_ready`` event a page sends once drawn. A session **renders** when its document holds the
   validity heatmap (the figure named ``tp-validity-heatmap``).
4. Every session then makes ``--changes`` control changes, ``--think`` seconds apart (uniform), cycling
   through the selected model (``tp-model-picker``), the TP of the selected cell and the GPU (``tp-gpu``),
   each a ``PATCH-DOC`` ``ModelChanged`` of the widget's ``value``, as BokehJS sends it. A change's
   **round trip** is from sending the patch to the last ``PATCH-DOC`` the server sends back for it (the
   view's update: the link, the heatmap's outline, the details), taken as settled after ``--quiet``
   seconds without one (Panel applies a change on the tick after Bokeh's ``OK``, so the first patch is
   awaited up to 15 s; a change that sends none in that time counts until its ``OK``). The time to the
   first patch (the change applied, its first update on the wire) is reported too.
5. RSS (psutil, the server process) is sampled every 0.25 s: **during** is the peak while sessions are
   open. The sessions close; **after** is the RSS once the server has discarded them all (its log
   counts ``Session ... destroyed``) and a further ``--settle`` seconds passed (the app's
   ``on_session_destroyed`` hook collects and ``malloc_trim``\\ s 2 s after the last one).

Figures (per allocator and round): time to first document p50/p95/max (s), round trip p50/p95/max (ms),
RSS before/during/after (MiB) and after/before ratio, sessions rendered, errors. Printed as a table and,
with ``--json``, written to a file (atomically). Every wait is bounded (``--timeout``). Nothing leaves the
loopback interface; the server is stopped by this script (SIGTERM to its group, SIGKILL after 20 s).

Usage::

    python scripts/load_test.py --sessions 30 --allocator both --rounds 2 --json /tmp/load.json

``tests/test_load.py`` runs it at 30 sessions and gates the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.panelserver import free_port, serve_command, stop_group, wait_until_serving  # noqa: E402

MIB = 1 << 20
_SESSION_LINE = re.compile(r"Session (\d+) (launching|destroyed)")
_TOKEN = re.compile(r'"token"\s*:\s*"([A-Za-z0-9_\-.=]+)"')


# ---------------------------------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------------------------------
class Server:
    """``panel serve dashboard`` in its own process group, its log in a temp file, its RSS sampled."""

    def __init__(self, allocator: str, extra_env: dict[str, str] | None = None):
        import psutil

        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(tempfile.mkstemp(prefix="tp-loadtest-", suffix=".log")[1])
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOKEH_") and k != "PYTHONMALLOC"}
        env.update({"PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "PANEL_LOG_LEVEL": "info",
                    "HF_HUB_OFFLINE": "1", **(extra_env or {})})
        if allocator == "malloc":
            env["PYTHONMALLOC"] = "malloc"
        elif allocator != "default":
            raise ValueError(f"allocator must be 'default' or 'malloc', not {allocator!r}")
        cmd = serve_command(self.port, "--check-unused-sessions", "1000", "--unused-session-lifetime", "4000")
        self._fh = open(self.log_path, "wb")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self._fh, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        wait_until_serving(self.proc, self.base + "/", self.log_path, 300)
        self.ps = psutil.Process(self.proc.pid)
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def rss_mib(self) -> float:
        return self.ps.memory_info().rss / MIB

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self._samples.append((time.monotonic(), self.rss_mib()))
            except Exception:  # noqa: BLE001 -- process gone
                return
            self._stop.wait(0.25)

    def peak_since(self, t0: float) -> float:
        vals = [r for t, r in self._samples if t >= t0]
        return max(vals) if vals else self.rss_mib()

    def counts(self) -> tuple[int, int]:
        text = self.log_path.read_text(errors="replace")
        launched = destroyed = 0
        for m in _SESSION_LINE.finditer(text):
            if m.group(2) == "launching":
                launched += 1
            else:
                destroyed += 1
        return launched, destroyed

    def wait_destroyed(self, n: int, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.counts()[1] >= n:
                return True
            time.sleep(0.5)
        return False

    def settle(self, seconds: float, timeout: float = 60.0) -> float:
        """Wait ``seconds``, then until two RSS readings 1 s apart differ by under 1 MiB; return the RSS."""
        time.sleep(seconds)
        end, last = time.monotonic() + timeout, self.rss_mib()
        while time.monotonic() < end:
            time.sleep(1.0)
            now = self.rss_mib()
            if abs(now - last) < 1.0:
                return now
            last = now
        return self.rss_mib()

    def stop(self) -> None:
        self._stop.set()
        stop_group(self.proc)
        self._fh.close()


# ---------------------------------------------------------------------------------------------------
# one session over the Bokeh protocol
# ---------------------------------------------------------------------------------------------------
def _walk(obj, out: dict):
    """Collect every serialized Bokeh model (``{"type": "object", "id": ..., "attributes": ...}``) by id."""
    if isinstance(obj, dict):
        if obj.get("type") == "object" and "id" in obj:
            out.setdefault(obj["id"], obj)
        for v in obj.values():
            _walk(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _walk(v, out)


def _options(attrs: dict) -> list[str]:
    vals = []
    for o in attrs.get("options") or attrs.get("completions") or []:
        vals.append(o[0] if isinstance(o, list) else o)
    return [str(v) for v in vals if isinstance(v, str | int)]


def find_controls(doc_json: dict) -> dict[str, tuple[str, list[str], str]]:
    """``{"model" | "tp" | "gpu": (model id, values to cycle through, current value)}`` from a document."""
    models: dict = {}
    _walk(doc_json, models)
    out: dict[str, tuple[str, list[str], str]] = {}
    for mid, m in models.items():
        a = m.get("attributes") or {}
        css = a.get("css_classes") or []
        title = str(a.get("title") or "")
        if m.get("name") == "AutocompleteInput" and "tp-model-picker" in css:
            out["model"] = (mid, _options(a), str(a.get("value") or ""))
        elif str(m.get("name")).endswith("Select") and "tp-gpu" in css:  # (Panel's Select: CustomSelect)
            out["gpu"] = (mid, [o for o in _options(a) if not o.lower().startswith("other")], str(a.get("value")))
        elif str(m.get("name")).endswith("Select") and title.startswith("TP of the selected cell"):
            out["tp"] = (mid, _options(a), str(a.get("value")))
    return out


def has_heatmap(doc_json: dict) -> bool:
    models: dict = {}
    _walk(doc_json, models)
    return any((m.get("attributes") or {}).get("name") == "tp-validity-heatmap" for m in models.values())


@dataclass
class SessionResult:
    ttfd_s: float | None = None
    rendered: bool = False
    round_trips_ms: list[float] = field(default_factory=list)
    #: ``(control, round trip ms, first patch ms or None)`` per change
    changes: list[tuple[str, float, float | None]] = field(default_factory=list)
    error: str = ""


class BokehSession:
    """A websocket session speaking the Bokeh protocol (bokeh.protocol's receiver parses the frames)."""

    def __init__(self, base: str):
        self.base = base
        self.ws = None
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.last_patch = 0.0
        self.patches = 0
        self.oks: dict[str, float] = {}
        self.t_sent = 0.0
        #: Seconds after the OK a change may take to send its first patch (every change of a control
        #: sends at least the page's new address), before it counts as answered by the OK alone.
        self.expect_patch = 15.0
        self.first_patch: float | None = None
        self._reader: asyncio.Task | None = None

    async def open(self) -> tuple[dict, float]:
        from tornado.httpclient import AsyncHTTPClient, HTTPRequest
        from tornado.websocket import websocket_connect

        t0 = time.perf_counter()
        resp = await AsyncHTTPClient().fetch(self.base + "/dashboard", request_timeout=300)
        m = _TOKEN.search(resp.body.decode("utf-8", "replace"))
        if not m:
            raise RuntimeError("no session token in the page")
        host = self.base.split("//", 1)[1]
        req = HTTPRequest(f"ws://{host}/dashboard/ws", headers={"Origin": self.base}, request_timeout=300)
        self.ws = await websocket_connect(req, subprotocols=["bokeh", m.group(1)], max_message_size=1 << 30)
        self._reader = asyncio.ensure_future(self._read())
        ack = await asyncio.wait_for(self.inbox.get(), 120)
        if ack.msgtype != "ACK":
            raise RuntimeError(f"expected ACK, got {ack.msgtype}")
        msgid = await self.send("PULL-DOC-REQ", {})
        while True:
            msg = await asyncio.wait_for(self.inbox.get(), 300)
            if msg.msgtype == "PULL-DOC-REPLY" and msg.header.get("reqid") == msgid:
                break
        ttfd = time.perf_counter() - t0
        # what a page sends once it is drawn (Panel's onload callbacks run on it)
        await self.send("PATCH-DOC", {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
            "type": "event", "name": "document_ready", "values": {"type": "map", "entries": []}}}]})
        return msg.content["doc"], ttfd

    async def _read(self) -> None:
        from bokeh.protocol import Protocol
        from bokeh.protocol.receiver import Receiver

        receiver = Receiver(Protocol())
        while True:
            frag = await self.ws.read_message()
            if frag is None:
                return
            msg = await receiver.consume(frag)
            if msg is None:
                continue
            now = time.perf_counter()
            if msg.msgtype == "PATCH-DOC":
                if self.first_patch is None or self.first_patch < self.t_sent:
                    self.first_patch = now
                self.last_patch, self.patches = now, self.patches + 1
                continue  # (their content is not needed: only when they arrive)
            if msg.msgtype == "OK":
                self.oks[msg.header.get("reqid")] = now
                continue
            await self.inbox.put(msg)

    async def send(self, msgtype: str, content: dict) -> str:
        msgid = uuid.uuid4().hex
        await self.ws.write_message(json.dumps({"msgid": msgid, "msgtype": msgtype}))
        await self.ws.write_message("{}")
        await self.ws.write_message(json.dumps(content))
        return msgid

    async def change(self, model_id: str, attr: str, value, quiet: float, timeout: float) -> float:
        """Send one ``ModelChanged``; return its round trip (s) as the module docstring defines it."""
        n0 = self.patches
        t0 = self.t_sent = time.perf_counter()
        msgid = await self.send("PATCH-DOC", {"events": [
            {"kind": "ModelChanged", "model": {"id": model_id}, "attr": attr, "new": value}]})
        end = t0 + timeout
        while time.perf_counter() < end:
            await asyncio.sleep(0.01)
            ok = self.oks.get(msgid)
            if ok is None:
                continue
            if self.patches == n0:  # (Panel applies a change on the next tick, after the OK)
                if time.perf_counter() - ok >= self.expect_patch:
                    return ok - t0
                continue
            if time.perf_counter() - self.last_patch >= quiet:
                return self.last_patch - t0
        raise TimeoutError(f"no answer to a change within {timeout} s")

    async def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
        if self._reader is not None:
            self._reader.cancel()


async def run_session(base: str, changes: int, think: tuple[float, float], quiet: float, timeout: float,
                      gate: asyncio.Semaphore, all_open: asyncio.Event, opened: list, rng: random.Random,
                      keep_open: asyncio.Event | None = None) -> SessionResult:
    res = SessionResult()
    s = BokehSession(base)
    try:
        async with gate:
            doc, res.ttfd_s = await asyncio.wait_for(s.open(), timeout)
        res.rendered = has_heatmap(doc)
        ctrl = find_controls(doc)
        opened.append(1)
        await asyncio.wait_for(all_open.wait(), timeout)
        plan = [k for k in ("model", "tp", "gpu") if k in ctrl and len(ctrl[k][1]) > 1]
        if not plan:
            raise RuntimeError(f"controls not found in the document (found {sorted(ctrl)})")
        for i in range(changes):
            await asyncio.sleep(rng.uniform(*think))
            key = plan[i % len(plan)]
            mid, values, current = ctrl[key]
            pool = [v for v in values if v != current] or values
            if key == "model":
                pool = pool[: 60]
            new = rng.choice(pool)
            rt = 1000 * await s.change(mid, "value", new, quiet, timeout)
            first = (1000 * (s.first_patch - s.t_sent)) if s.first_patch and s.first_patch >= s.t_sent else None
            res.round_trips_ms.append(rt)
            res.changes.append((key, rt, first))
            ctrl[key] = (mid, values, new)
        if keep_open is not None:
            await keep_open.wait()
    except Exception as exc:  # noqa: BLE001 -- recorded per session
        res.error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        await s.close()
    return res


async def run_sessions(base: str, n: int, *, changes: int, think: tuple[float, float], quiet: float,
                       timeout: float, concurrency: int, seed: int) -> list[SessionResult]:
    gate = asyncio.Semaphore(concurrency)
    all_open = asyncio.Event()
    opened: list = []
    rng = random.Random(seed)
    tasks = [asyncio.ensure_future(run_session(base, changes, think, quiet, timeout, gate, all_open, opened,
                                               random.Random(rng.random())))
             for _ in range(n)]

    async def release():
        end = time.monotonic() + timeout
        while len(opened) + sum(t.done() for t in tasks) < n and time.monotonic() < end:
            await asyncio.sleep(0.1)
        all_open.set()

    rel = asyncio.ensure_future(release())
    out = await asyncio.gather(*tasks)
    rel.cancel()
    return list(out)


# ---------------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


@dataclass
class RoundFigures:
    allocator: str
    round: int
    sessions: int
    rendered: int
    errors: list[str]
    ttfd_p50_s: float | None
    ttfd_p95_s: float | None
    ttfd_max_s: float | None
    rt_n: int
    rt_p50_ms: float | None
    rt_p95_ms: float | None
    rt_max_ms: float | None
    rss_start_mib: float
    rss_baseline_mib: float
    rss_during_mib: float
    rss_after_mib: float
    rss_after_ratio: float
    wall_s: float


def run(allocator: str, sessions: int, rounds: int = 1, changes: int = 8, think=(2.0, 5.0), quiet: float = 0.3,
        timeout: float = 600.0, concurrency: int = 4, settle: float = 8.0, seed: int = 24,
        log=print) -> list[RoundFigures]:
    """Start one server with ``allocator``, warm it up, run ``rounds`` rounds of ``sessions`` sessions."""
    srv = Server(allocator)
    out: list[RoundFigures] = []
    try:
        rss_start = srv.rss_mib()
        asyncio.run(run_sessions(srv.base, 1, changes=changes, think=(0.1, 0.2), quiet=quiet, timeout=timeout,
                                 concurrency=1, seed=seed))
        srv.wait_destroyed(1, 60)
        baseline = srv.settle(settle)
        destroyed = srv.counts()[1]
        log(f"[{allocator}] start {rss_start:.0f} MiB, warm baseline {baseline:.0f} MiB")
        for r in range(rounds):
            t0 = time.monotonic()
            res = asyncio.run(run_sessions(srv.base, sessions, changes=changes, think=think, quiet=quiet,
                                           timeout=timeout, concurrency=concurrency, seed=seed + r + 1))
            wall = time.monotonic() - t0
            during = srv.peak_since(t0)
            destroyed += sessions
            if not srv.wait_destroyed(destroyed, 120):
                log(f"[{allocator}] warning: the server did not discard all sessions within 120 s")
            after = srv.settle(settle)
            rts = [x for s in res for x in s.round_trips_ms]
            ttfd = [s.ttfd_s for s in res if s.ttfd_s is not None]
            fig = RoundFigures(
                allocator=allocator, round=r + 1, sessions=sessions, rendered=sum(s.rendered for s in res),
                errors=sorted({s.error for s in res if s.error}),
                ttfd_p50_s=pct(ttfd, .5), ttfd_p95_s=pct(ttfd, .95), ttfd_max_s=max(ttfd) if ttfd else None,
                rt_n=len(rts), rt_p50_ms=pct(rts, .5), rt_p95_ms=pct(rts, .95), rt_max_ms=max(rts) if rts else None,
                rss_start_mib=rss_start, rss_baseline_mib=baseline, rss_during_mib=during, rss_after_mib=after,
                rss_after_ratio=after / baseline, wall_s=wall)
            out.append(fig)
            log(format_row(fig))
    finally:
        srv.stop()
    return out


def _f(v, fmt):
    return "-" if v is None else format(v, fmt)


HEADER = ("alloc    rnd  sess rend  ttfd p50/p95/max s   rt p50/p95/max ms      "
          "RSS start/base/during/after MiB  after/base")


def format_row(f: RoundFigures) -> str:
    return (f"{f.allocator:8s} {f.round:3d} {f.sessions:5d} {f.rendered:4d}  "
            f"{_f(f.ttfd_p50_s, '5.2f')}/{_f(f.ttfd_p95_s, '5.2f')}/{_f(f.ttfd_max_s, '5.2f')}   "
            f"{_f(f.rt_p50_ms, '6.0f')}/{_f(f.rt_p95_ms, '6.0f')}/{_f(f.rt_max_ms, '6.0f')}   "
            f"{f.rss_start_mib:5.0f}/{f.rss_baseline_mib:5.0f}/{f.rss_during_mib:5.0f}/{f.rss_after_mib:5.0f}"
            f"           {f.rss_after_ratio:4.2f}" + (f"  errors: {f.errors}" if f.errors else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--allocator", choices=["default", "malloc", "both"], default="both")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of --sessions sessions per server")
    ap.add_argument("--changes", type=int, default=8, help="control changes per session")
    ap.add_argument("--think", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX"),
                    help="seconds between a session's changes (uniform)")
    ap.add_argument("--quiet", type=float, default=0.3, help="seconds without a patch that end a round trip")
    ap.add_argument("--concurrency", type=int, default=4, help="sessions opening at once")
    ap.add_argument("--settle", type=float, default=8.0, help="seconds after the last session is discarded")
    ap.add_argument("--timeout", type=float, default=600.0, help="bound of every wait (s)")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--json", type=Path, help="write the figures here (atomically)")
    a = ap.parse_args(argv)
    allocs = ["default", "malloc"] if a.allocator == "both" else [a.allocator]
    print(HEADER, flush=True)
    figs: list[RoundFigures] = []
    for alloc in allocs:
        figs += run(alloc, a.sessions, a.rounds, a.changes, tuple(a.think), a.quiet, a.timeout, a.concurrency,
                    a.settle, a.seed, log=lambda s: print(s, flush=True))
    if a.json:
        from dashboard.atomic import atomic_write_text

        atomic_write_text(a.json, json.dumps([asdict(f) for f in figs], indent=1))
    bad = [f for f in figs if f.rendered < f.sessions or f.errors]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
