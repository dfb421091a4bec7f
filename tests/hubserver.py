"""A local, Hub-compatible HTTP server for testing :mod:`dashboard.hub` with the real huggingface_hub client.

It answers the few endpoints the scraper's huggingface_hub calls use, the way huggingface.co does
(checked against huggingface_hub 2.4 ``hf_api.py``, ``file_download.py`` and ``utils/_http.py``):

* ``GET /api/models`` (``HfApi.list_models``): ``author``, ``search``, ``pipeline_tag``, ``sort``
  (descending), ``limit``; pages linked with a GitHub-style ``Link: <...>; rel="next"`` header.
* ``GET /api/models/{org}/{name}`` and ``.../revision/{rev}`` (``HfApi.model_info``): ``sha``,
  ``lastModified``, ``downloads``, ``likes``, ``gated``, ``safetensors``, ``siblings`` ...
* ``HEAD`` / ``GET /{org}/{name}/resolve/{rev}/{file}`` (``hf_hub_download``): ``ETag`` (git blob sha1,
  quoted), ``X-Repo-Commit``, ``Content-Length``; errors carry ``X-Error-Code`` (``RepoNotFound``,
  ``EntryNotFound``, ``GatedRepo``, ``RevisionNotFound``) which huggingface_hub maps to its exception types.
* Every other ``/api/...`` path answers 404.

For the tests it also

* counts requests per ``(kind, repo_id)`` where kind is ``list``, ``info``, ``head`` or ``get``
  (:meth:`FakeHub.count`), and logs every request's method, path and ``Authorization`` header;
* adds a fixed ``latency`` (seconds) to every answer;
* injects faults per repo and endpoint, consumed in order (:meth:`FakeHub.inject`): an HTTP status
  with headers (``429`` + ``Retry-After``, ``500``...), a ``sleep`` before answering (to trip client
  timeouts), or an ``echo_auth`` error body that repeats the request's Authorization header (a hostile
  server, to prove the scraper scrubs the token from what it writes).

Use it in-process (``with FakeHub() as hub: ... hub.url``) or as a process:
``python tests/hubserver.py --port 0 --repos 200 --latency 0.05`` prints ``READY <url>`` on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

__all__ = ["FakeHub", "FakeRepo", "demo_hub", "llama_like_config"]


def llama_like_config(layers: int = 32, heads: int = 32, kv_heads: int = 8, hidden: int = 4096) -> dict:
    """A small Llama-style ``config.json`` dict (fixture data for the fake repos)."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": hidden * 7 // 2,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": hidden // heads,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeRepo:
    """One model repo on the fake Hub.

    ``config`` is a dict (served as JSON) or raw bytes (served verbatim: use this for truncated or
    otherwise broken JSON); ``None`` means the repo has no ``config.json``. ``gated`` repos answer
    the resolve endpoint with 401 ``GatedRepo`` unless the request carries ``Bearer <t>`` for a ``t``
    in :attr:`FakeHub.granted_tokens`; their ``/api/models/{id}`` info answers 200 like the real Hub.
    """

    repo_id: str
    config: dict | bytes | None = None
    gated: bool = False
    downloads: int = 0
    likes: int = 0
    trending: float = 0.0
    pipeline_tag: str = "text-generation"
    safetensors: dict[str, int] | None = None
    revision: int = 0
    last_modified: str = "2026-11-01T00:00:00.000Z"
    #: other files of the repo (``{path: bytes}``, e.g. ``quantize_config.json``), served beside config.json
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def author(self) -> str:
        return self.repo_id.split("/", 1)[0] if "/" in self.repo_id else ""

    @property
    def config_bytes(self) -> bytes | None:
        if self.config is None:
            return None
        if isinstance(self.config, bytes):
            return self.config
        return json.dumps(self.config, indent=2).encode()

    @property
    def sha(self) -> str:
        """Commit sha: changes whenever the config changes (see :meth:`FakeHub.update`)."""
        return hashlib.sha1(f"{self.repo_id}@{self.revision}".encode()).hexdigest()

    def info(self) -> dict[str, Any]:
        siblings = [{"rfilename": ".gitattributes"}, {"rfilename": "README.md"}]
        if self.config is not None:
            siblings.append({"rfilename": "config.json"})
        siblings += [{"rfilename": name} for name in sorted(self.files)]
        out: dict[str, Any] = {
            "_id": hashlib.md5(self.repo_id.encode()).hexdigest()[:24],
            "id": self.repo_id,
            "modelId": self.repo_id,
            "author": self.author,
            "sha": self.sha,
            "lastModified": self.last_modified,
            "createdAt": "2025-01-01T00:00:00.000Z",
            "private": False,
            "disabled": False,
            "gated": "manual" if self.gated else False,
            "downloads": self.downloads,
            "likes": self.likes,
            "trendingScore": self.trending,
            "pipeline_tag": self.pipeline_tag,
            "library_name": "transformers",
            "tags": ["transformers", "safetensors", self.pipeline_tag],
            "siblings": siblings,
        }
        if self.safetensors is not None:
            out["safetensors"] = {"parameters": dict(self.safetensors), "total": sum(self.safetensors.values())}
        return out


@dataclass
class _Fault:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    sleep: float = 0.0
    echo_auth: bool = False
    body: bytes | None = None
    #: close the connection with a TCP reset, no answer (``ConnectionResetError`` on the client)
    reset: bool = False
    #: send the real answer's headers (its full ``Content-Length``) and only this many body bytes, then close
    truncate: int | None = None
    #: send the real body this many bytes per write, ``drip_s`` seconds apart (a slow Hub)
    drip: int | None = None
    drip_s: float = 0.0
    #: the size a ``HEAD`` announces (understating the file); a ``GET`` then sends the whole body with no
    #: ``Content-Length``, ended by closing the connection
    understate: int | None = None
    #: send the body gzip-encoded (``Content-Encoding: gzip``; ``Content-Length`` of the compressed bytes)
    gzip: bool = False


class FakeHub:
    """The server plus its state. Thread-safe; start with ``with FakeHub() as hub`` or :meth:`start`.

    Parameters
    ----------
    latency : float
        Seconds added to every answer (simulates the network round trip).
    page_size : int
        Models per page of ``/api/models`` (pagination follows the ``Link`` header).
    """

    def __init__(self, *, latency: float = 0.0, page_size: int = 1000, host: str = "127.0.0.1", port: int = 0):
        self.latency = latency
        self.page_size = page_size
        self.repos: dict[str, FakeRepo] = {}
        self.granted_tokens: set[str] = set()
        #: every request: (method, path, Authorization header or None, time.monotonic() on arrival)
        self.requests: list[tuple[str, str, str | None, float]] = []
        self._counts: Counter[tuple[str, str]] = Counter()
        self._times: dict[tuple[str, str], list[float]] = {}
        self._faults: dict[tuple[str, str], list[_Fault]] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _make_handler(self))
        self._server.daemon_threads = True
        self._server.request_queue_size = 128
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- content -----------------------------------------------------------------------------
    def add(self, repo_id: str, config: dict | bytes | None = None, **kw: Any) -> FakeRepo:
        """Add (or replace) a repo. ``config`` defaults to :func:`llama_like_config`."""
        repo = FakeRepo(repo_id, llama_like_config() if config is None and not kw.pop("no_config", False) else config, **kw)
        with self._lock:
            self.repos[repo_id] = repo
        return repo

    def update(self, repo_id: str, config: dict | bytes) -> str:
        """Push a new config to a repo: its commit sha changes. Returns the new sha."""
        with self._lock:
            repo = self.repos[repo_id]
            repo.config = config
            repo.revision += 1
            return repo.sha

    def inject(self, repo_id: str, kind: str, *faults: dict[str, Any]) -> None:
        """Queue faults for ``(kind, repo_id)``; each request of that kind consumes one, in order.

        ``kind`` is ``info``, ``head``, ``get``, ``resolve`` (both head and get share one queue) or
        ``list`` (``repo_id`` ignored, use ``""``). A fault is a dict with any of ``status`` (int),
        ``headers`` (dict), ``sleep`` (seconds before answering; with no status the normal answer
        follows), ``echo_auth`` (bool: answer 500 whose error message repeats the Authorization
        header), ``body`` (bytes), ``reset`` (bool: a TCP reset, no answer), and for ``resolve`` / ``get``
        the real file broken: ``truncate`` (body bytes sent before the connection closes), ``drip`` /
        ``drip_s`` (bytes per write, seconds between writes), ``understate`` (the size a HEAD announces; a GET
        sends no ``Content-Length`` and closes the connection after the whole body),
        ``gzip`` (bool: ``Content-Encoding: gzip``).
        """
        with self._lock:
            self._faults.setdefault((kind, repo_id), []).extend(_Fault(**f) for f in faults)

    def times(self, kind: str, repo_id: str) -> list[float]:
        """Arrival times (``time.monotonic()``) of the requests of ``kind`` for ``repo_id``, in order."""
        with self._lock:
            return list(self._times.get((kind, repo_id), []))

    def count(self, kind: str | None = None, repo_id: str | None = None) -> int:
        """Requests seen of ``kind`` (``list``/``info``/``head``/``get``; None = all) for ``repo_id`` (None = all)."""
        with self._lock:
            return sum(
                n for (k, r), n in self._counts.items() if (kind is None or k == kind) and (repo_id is None or r == repo_id)
            )

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()
            self._times.clear()
            self.requests.clear()

    # ---- internals used by the handler -------------------------------------------------------
    def _record(self, kind: str, repo_id: str, method: str, path: str, auth: str | None) -> _Fault | None:
        with self._lock:
            self._counts[(kind, repo_id)] += 1
            self._times.setdefault((kind, repo_id), []).append(time.monotonic())
            self.requests.append((method, path, auth, time.monotonic()))
            for key in ((kind, repo_id), ("resolve", repo_id) if kind in ("head", "get") else None):
                if key is not None and self._faults.get(key):
                    return self._faults[key].pop(0)
        return None


def _make_handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeHub/1.0"
        # headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
            pass

        # -- helpers --------------------------------------------------------------------------
        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, *, head: bool = False) -> None:
            self.send_response(status)
            hdrs = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
            hdrs.setdefault("Content-Length", str(len(body)))
            for k, v in hdrs.items():
                self.send_header(k, v)
            self.end_headers()
            if not head and body:
                self.wfile.write(body)

        def _error(self, status: int, message: str, code: str | None = None, extra: dict[str, str] | None = None, *, head=False) -> None:
            headers = {"X-Error-Message": message, **(extra or {})}
            if code:
                headers["X-Error-Code"] = code
            self._send(status, json.dumps({"error": message}).encode(), headers, head=head)

        def _apply_fault(self, fault: _Fault | None, *, head: bool) -> bool:
            """Play a fault. True when it fully answered the request."""
            if fault is None:
                return False
            if fault.sleep:
                time.sleep(fault.sleep)
            if fault.reset:
                import socket
                import struct

                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return True
            if fault.echo_auth:
                self._error(500, f"internal error; you sent {self.headers.get('authorization')}", head=head)
                return True
            if fault.status is not None:
                body = fault.body if fault.body is not None else json.dumps({"error": f"injected {fault.status}"}).encode()
                self._send(fault.status, body, fault.headers, head=head)
                return True
            return False

        def _expanded(self, info: dict[str, Any]) -> dict[str, Any]:
            """Like the Hub: with ``expand=...`` only ``_id``, ``id`` and the expanded properties come back."""
            if not self._expand:
                return info
            return {k: v for k, v in info.items() if k in ("_id", "id") or k in self._expand}

        def _bearer(self) -> str | None:
            auth = self.headers.get("authorization") or ""
            return auth[7:] if auth.lower().startswith("bearer ") else None

        # -- routing --------------------------------------------------------------------------
        def do_HEAD(self) -> None:  # noqa: N802
            self._route(head=True)

        def do_GET(self) -> None:  # noqa: N802
            self._route(head=False)

        def _route(self, *, head: bool) -> None:
            try:
                if hub.latency:
                    time.sleep(hub.latency)
                parts = urlsplit(self.path)
                segs = [unquote(s) for s in parts.path.split("/") if s]
                multi = parse_qs(parts.query)
                query = {k: v[-1] for k, v in multi.items()}
                self._expand = multi.get("expand") or multi.get("expand[]")
                if segs[:2] == ["api", "models"] and len(segs) == 2:
                    return self._list(query, multi, head)
                if segs[:2] == ["api", "models"] and len(segs) in (3, 4, 5, 6):
                    # /api/models/{org}/{name}[/revision/{rev}] or /api/models/{name}
                    rest = segs[2:]
                    if "revision" in rest:
                        rest = rest[: rest.index("revision")]
                    if len(rest) <= 2:
                        return self._info("/".join(rest), head)
                if segs and segs[0] == "api":
                    hub._record("other", "", self.command, self.path, self.headers.get("authorization"))
                    return self._error(404, "Not found (fake hub)", head=head)
                if "resolve" in segs and 1 <= segs.index("resolve") <= 2 and len(segs) > segs.index("resolve") + 2:
                    i = segs.index("resolve")
                    return self._resolve("/".join(segs[:i]), segs[i + 1], "/".join(segs[i + 2 :]), head)
                hub._record("other", "", self.command, self.path, self.headers.get("authorization"))
                self._error(404, "Not found (fake hub)", head=head)
            except (BrokenPipeError, ConnectionResetError):  # client timed out and went away
                pass

        def _list(self, query: dict[str, str], multi: dict[str, list[str]], head: bool) -> None:
            fault = hub._record("list", "", self.command, self.path, self.headers.get("authorization"))
            if self._apply_fault(fault, head=head):
                return
            with hub._lock:
                repos = list(hub.repos.values())
            if a := query.get("author"):
                repos = [r for r in repos if r.author == a]
            if s := query.get("search"):
                repos = [r for r in repos if s.lower() in r.repo_id.lower()]
            if t := query.get("pipeline_tag"):
                repos = [r for r in repos if r.pipeline_tag == t]
            key = {"downloads": "downloads", "likes": "likes", "trendingScore": "trending"}.get(query.get("sort", ""))
            if key:
                repos.sort(key=lambda r: getattr(r, key), reverse=True)
            offset = int(query.get("cursor", "0"))
            size = min(hub.page_size, int(query["limit"])) if "limit" in query else hub.page_size
            page = repos[offset : offset + size]
            headers = {}
            if offset + size < len(repos):
                q = dict(multi, cursor=[str(offset + size)])
                headers["Link"] = f'<{hub.url}/api/models?{urlencode(q, doseq=True)}>; rel="next"'
            body = json.dumps([self._expanded(r.info()) for r in page]).encode()
            self._send(200, body, headers, head=head)

        def _info(self, repo_id: str, head: bool) -> None:
            fault = hub._record("info", repo_id, self.command, self.path, self.headers.get("authorization"))
            if self._apply_fault(fault, head=head):
                return
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._error(404, "Repository not found", "RepoNotFound", head=head)
            self._send(200, json.dumps(self._expanded(repo.info())).encode(), head=head)

        def _resolve(self, repo_id: str, revision: str, filename: str, head: bool) -> None:
            kind = "head" if head else "get"
            fault = hub._record(kind, repo_id, self.command, self.path, self.headers.get("authorization"))
            if self._apply_fault(fault, head=head):
                return
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._error(404, "Repository not found", "RepoNotFound", head=head)
            if revision not in ("main", repo.sha):
                return self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound", head=head)
            commit = {"X-Repo-Commit": repo.sha}
            if repo.gated and self._bearer() not in hub.granted_tokens:
                msg = f"Access to model {repo_id} is restricted. You must have access to it and be authenticated."
                return self._error(401, msg, "GatedRepo", commit, head=head)
            data = repo.config_bytes if filename == "config.json" else repo.files.get(filename)
            if data is None:
                return self._error(404, "Entry not found", "EntryNotFound", commit, head=head)
            headers = {**commit, "ETag": f'"{_git_blob_sha1(data)}"', "Content-Type": "text/plain; charset=utf-8"}
            if fault is not None and (fault.truncate is not None or fault.drip or fault.understate is not None
                                      or fault.gzip):
                return self._send_faulty(fault, data, headers, head=head)
            self._send(200, data, headers, head=head)

        def _send_faulty(self, fault: _Fault, data: bytes, headers: dict[str, str], *, head: bool) -> None:
            """The real answer, broken as ``fault`` says (truncated, dripped, size understated, gzip-encoded)."""
            import gzip as _gzip

            body = _gzip.compress(data) if fault.gzip else data
            if fault.gzip:
                headers = {**headers, "Content-Encoding": "gzip"}
            self.send_response(200)
            if fault.understate is not None and not head:  # no length at all: the body ends when the connection does
                headers = {**headers, "Connection": "close"}
                self.close_connection = True
            else:
                headers = {**headers, "Content-Length": str(len(body) if fault.understate is None else fault.understate)}
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if head:
                return
            if fault.truncate is not None:
                self.wfile.write(body[: fault.truncate])
                self.wfile.flush()
                self.close_connection = True
                return
            step = fault.drip or len(body) or 1
            for i in range(0, len(body), step):
                self.wfile.write(body[i:i + step])
                self.wfile.flush()
                if fault.drip_s:
                    time.sleep(fault.drip_s)
            if fault.understate is not None:
                self.close_connection = True

    return Handler


def demo_hub(n: int, *, latency: float = 0.0, port: int = 0) -> FakeHub:
    """A fake Hub with ``n`` Llama-like repos ``bench-org/model-NNNNN`` (not started)."""
    hub = FakeHub(latency=latency, port=port)
    for i in range(n):
        hub.add(f"bench-org/model-{i:05d}", llama_like_config(layers=16 + i % 17), downloads=n - i, likes=i)
    return hub


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--repos", type=int, default=100, help="number of bench-org/model-NNNNN repos")
    p.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    args = p.parse_args(argv)
    hub = demo_hub(args.repos, latency=args.latency, port=args.port)
    print(f"READY {hub.url}", flush=True)
    try:
        hub._server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
