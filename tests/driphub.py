"""A hostile local Hub on 127.0.0.1 that answers one byte at a time (issue 24, item 4).

``HEAD`` / ``GET /{org}/{name}/resolve/{rev}/config.json``: with ``mode="body"`` the headers come at once
(``X-Repo-Commit``, ``ETag``, ``Content-Length``) and the ``GET`` body one byte every ``interval``
seconds; with ``mode="head"`` even the status line and headers of the ``HEAD`` drip. Any other file: 404
(``EntryNotFound``). Every request's start and the moment its client went away (a write failed) are
recorded, so a test can tell when the drip ended. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHA = "0123456789abcdef0123456789abcdef01234567"


class DripHub:
    def __init__(self, config: bytes | None = None, *, mode: str = "body", interval: float = 0.2, port: int = 0):
        self.config = config or json.dumps({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
                                            "num_attention_heads": 32, "num_key_value_heads": 8,
                                            "pad": "x" * 4000}).encode()
        self.mode, self.interval = mode, interval
        self.started: list[float] = []  # (monotonic) a dripping answer began
        self.dropped: list[float] = []  # (monotonic) its client went away
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> DripHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(hub: DripHub):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *a):  # noqa: D401 - silence
            pass

        def _drip(self, data: bytes) -> None:
            hub.started.append(time.monotonic())
            try:
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(hub.interval)
            except OSError:
                hub.dropped.append(time.monotonic())
                self.close_connection = True

        def _answer(self, head: bool) -> None:
            name = self.path.split("?", 1)[0].rsplit("/", 1)[-1]
            if "/resolve/" not in self.path or name != "config.json":
                body = b'{"error": "Entry not found"}'
                self.send_response(404)
                for k, v in (("X-Error-Code", "EntryNotFound"), ("X-Repo-Commit", SHA),
                             ("Content-Type", "application/json"), ("Content-Length", str(len(body)))):
                    self.send_header(k, v)
                self.end_headers()
                if not head:
                    self.wfile.write(body)
                return
            data = hub.config
            etag = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            lines = [f"HTTP/1.1 200 OK", f"X-Repo-Commit: {SHA}", f'ETag: "{etag}"',
                     "Content-Type: text/plain; charset=utf-8", f"Content-Length: {len(data)}", "", ""]
            headers = "\r\n".join(lines).encode()
            if head and hub.mode == "head":
                self._drip(headers)
                return
            self.wfile.write(headers)
            self.wfile.flush()
            if not head:
                self._drip(data)

        def do_HEAD(self):  # noqa: N802
            self._answer(True)

        def do_GET(self):  # noqa: N802
            self._answer(False)

    return H
