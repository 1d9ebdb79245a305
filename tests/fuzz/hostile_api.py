"""A hostile "GitHub API" on 127.0.0.1: every answer is one kind of wrong.

It listens on the loopback interface only, serves the paths `ci-tools matrix --until-green`
and `ci-tools release` ask for, and answers each request in its `mode`:
* `html`: 200 with an HTML page (a captive portal, a proxy's error page);
* `object`: 200 with an object where a list belongs, and a list where an object belongs;
* `nulls`: the right shapes with null where a string or a boolean belongs (`context: null`,
  `prerelease: null`, `tag_name: null`) and numbers where strings belong;
* `endless`: every list a full page of unrelated items with a `Link: rel="next"` to the next
  page, for ever;
* `hang`: accepts the connection and never answers;
* `trickle`: answers 200 and then one byte of body every `TRICKLE_SECONDS`, for ever;
* `five`: 502 with a Retry-After far beyond any budget;
* `mixed`: each request answered in one of the modes above but the hanging ones, chosen by a
  seeded random generator.
Every request is counted (`requests`), so a test can bound how many a command made.
"""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MODES = ("html", "object", "nulls", "endless", "hang", "trickle", "five", "mixed")
ANSWERING = ("html", "object", "nulls", "endless", "five")
TRICKLE_SECONDS = 0.5
HTML = b"<!DOCTYPE html><html><body><h1>Sign in to the network</h1></body></html>"


class HostileApi:
    def __init__(self, mode: str, repository: str = "acme/torch-builds", seed: int = 0) -> None:
        assert mode in MODES, mode
        self.mode = mode
        self.rng = random.Random(seed)
        self.repository = repository
        self.requests = 0
        self.stopping = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                api.answer(self)

            def do_POST(self) -> None:
                api.answer(self)

            def do_PATCH(self) -> None:
                api.answer(self)

            def do_DELETE(self) -> None:
                api.answer(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> HostileApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    # --- answers ---------------------------------------------------------------------------

    def answer(self, req: BaseHTTPRequestHandler) -> None:
        self.requests += 1
        mode = self.rng.choice(ANSWERING) if self.mode == "mixed" else self.mode
        length = int(req.headers.get("Content-Length") or 0)
        if length:
            req.rfile.read(min(length, 1 << 20))
        parts = urlsplit(req.path)
        query = parse_qs(parts.query)
        if mode == "hang":
            self.stopping.wait(600)
            return
        if mode == "trickle":
            self._trickle(req)
            return
        if mode == "five":
            self._send(req, 502, {"message": "Bad Gateway"}, {"Retry-After": "86400"})
            return
        if mode == "html":
            self._send(req, 200, HTML, {"Content-Type": "text/html"})
            return
        if parts.path == f"/repos/{self.repository}" and mode != "object":
            owner, name = self.repository.split("/")
            repo = {"id": 1, "name": name, "full_name": self.repository, "owner": {"login": owner}}
            self._send(req, 200, {**repo, "url": f"{self.url}/repos/{self.repository}"})
            return
        listing = self._is_list(parts.path)
        if mode == "object":
            body: Any = {"message": "not a list", "total": 3} if listing else []
            self._send(req, 200, body)
        elif mode == "nulls" and "/git/ref" in parts.path:
            # No tag of that name: GitHub's 404 (a null ref object is the object mode's case).
            self._send(req, 404, {"message": "Not Found"})
        elif mode == "nulls":
            tag = parts.path.rpartition("/releases/tags/")[2] or None
            body = [self._null_item(parts.path)] if listing else self._release(tag)
            self._send(req, 200, body)
        else:  # endless
            self._endless(req, parts.path, query, listing)

    @staticmethod
    def _is_list(path: str) -> bool:
        return path.endswith(("/releases", "/assets")) or "/statuses/" in path

    def _null_item(self, path: str) -> dict[str, Any]:
        if "/statuses/" in path:
            return {"id": "7", "state": "success", "context": None, "description": 5, "url": None}
        if path.endswith("/assets"):
            return {"id": None, "name": None, "url": None}
        return self._release(None)

    def _release(self, tag: str | None) -> dict[str, Any]:
        base = f"{self.url}/repos/{self.repository}/releases/1"
        return {
            "id": 1,
            "url": base,
            "assets_url": f"{base}/assets",
            "upload_url": f"{self.url}/uploads/repos/{self.repository}/releases/1/assets{{?name}}",
            "html_url": None,
            "tag_name": tag,
            "name": 7,
            "body": None,
            "draft": True,
            "prerelease": None,
            "assets": None,
            "full_name": self.repository,
            "owner": {"login": None},
        }

    def _endless(
        self, req: BaseHTTPRequestHandler, path: str, query: dict[str, list[str]], listing: bool
    ) -> None:
        if not listing:
            self._send(req, 404, {"message": "Not Found"})
            return
        page = int((query.get("page") or ["1"])[0] or 1)
        size = int((query.get("per_page") or ["30"])[0] or 30)
        if "/statuses/" in path:
            item: dict[str, Any] = {
                "id": 1,
                "state": "failure",
                "context": "ci-tools/other",
                "description": "inputs 0",
            }
        else:
            item = self._release(f"unrelated-{page}")
        link = f'<{self.url}{path}?per_page={size}&page={page + 1}>; rel="next"'
        self._send(req, 200, [item] * size, {"Link": link})

    def _trickle(self, req: BaseHTTPRequestHandler) -> None:
        try:
            req.send_response(200)
            req.send_header("Content-Type", "application/json")
            req.send_header("Content-Length", str(1 << 30))
            req.end_headers()
            req.wfile.write(b"[")
            while not self.stopping.wait(TRICKLE_SECONDS):
                req.wfile.write(b" ")
                req.wfile.flush()
        except OSError:
            return

    @staticmethod
    def _send(
        req: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            req.send_response(status)
            for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
                req.send_header(name, value)
            req.send_header("Content-Length", str(len(raw)))
            req.end_headers()
            req.wfile.write(raw)
        except OSError:
            return
