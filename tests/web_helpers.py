"""`othello-jax serve` in the test process (its table and app on a free port, on a thread) and
small JSON calls against it, for tests/test_serve_api.py and tests/test_serve_browser.py."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from othello_jax.commands import serve
from othello_jax.interface.web_games import GameTable


class Server:
    """A running server: its base ``url`` and its games' ``table``."""

    def __init__(self, url: str, table: GameTable):
        self.url, self.table = url, table

    def call(self, path: str, body: Any = None, method: str | None = None, raw: bytes | None = None,
             timeout: float = 30) -> tuple[int, Any]:
        """(status, decoded JSON or text) of one request; ``body`` is sent as JSON (a POST)."""
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method or ("POST" if data is not None
                                                                                         else "GET"))
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, payload, kind = response.status, response.read(), response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as error:
            status, payload, kind = error.code, error.read(), error.headers.get("Content-Type", "")
        return status, json.loads(payload) if "json" in kind else payload.decode()

    def settled(self, game_id: str, timeout: float = 60) -> dict:
        """The game's view once no search runs for it."""
        deadline = time.monotonic() + timeout
        while True:
            status, view = self.call(f"/api/games/{game_id}")
            assert status == 200, view
            if view["busy"] is None or time.monotonic() > deadline:
                return view
            time.sleep(0.05)


@contextmanager
def running_server(argv: list[str], watch_pause_s: float = 0.0) -> Iterator[Server]:
    """`othello-jax serve ARGV` (its options; the address is chosen here) until the block ends."""
    table, _ = serve.build_table(serve.build_parser().parse_args(argv))
    table.watch_pause_s = watch_pause_s
    with serve.in_background(table) as url:
        yield Server(url.rstrip("/"), table)
