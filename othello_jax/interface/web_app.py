"""The web app of `othello-jax serve`: a small JSON API over :class:`~othello_jax.interface.web_games.GameTable`
and the page's static files (plain HTML, CSS and JavaScript modules in ``static/``, nothing
fetched from elsewhere).

Starlette (the optional extra ``[web]``) routes the requests (POSTs must say they send JSON, and a
server on this machine only answers to its local names); every game call runs in a worker
thread (``run_in_threadpool``), and searches on the table's own pool, so the event loop only
moves bytes. Bad requests get a 4xx with ``{"error": "one line"}``; anything unexpected a 500
with one line saying it is a bug (the traceback on the server's standard error), and the
server serves on.

    GET  /                          the page
    GET  /api/engines               the engines on offer: [{name, sizes, network}]
    POST /api/games                 a new game ({size, black, white, sims, seconds}) -> its view
    GET  /api/games/ID              the game's view (the page polls it while a search runs)
    POST /api/games/ID/ACTION       new, move {square}, undo, redo, hint, load {text} -> the view
    GET  /api/games/ID/record       the game as a GGF file
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from othello_jax.errors import first_line
from othello_jax.interface.web_games import GameTable, WebGame, WebRequestError

STATIC_DIR = Path(__file__).parent / "static"
MAX_BODY = 64 * 1024  # bytes: a transcript or a board string is far less


class RequestTooLarge(WebRequestError):
    """A request body beyond MAX_BODY."""

    status = 413


class NotJson(WebRequestError):
    """A POST that does not say it sends JSON: what a form or a script on another site can send
    to this machine without the browser asking this server first (CORS), so it is refused."""

    status = 415


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": first_line(message)}, status_code=status)


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object (empty for an empty body); WebRequestError on anything else."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise NotJson("send JSON (Content-Type: application/json)")
    if int(request.headers.get("content-length") or 0) > MAX_BODY:
        raise RequestTooLarge(f"the request is too large (over {MAX_BODY // 1024} KiB)")
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise RequestTooLarge(f"the request is too large (over {MAX_BODY // 1024} KiB)")
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise WebRequestError("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise WebRequestError("the request body must be a JSON object")
    return body


def _text(body: dict, key: str) -> str:
    value = body.get(key, "")
    if not isinstance(value, str):
        raise WebRequestError(f"{key} must be text")
    return value


def _number(body: dict, key: str, kind: type = int) -> Any:
    value = body.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise WebRequestError(f"{key} must be a number")
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise WebRequestError(f"{key} must be a number, got {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise WebRequestError(f"{key} must be a finite number")
    return number


def _new_options(body: dict) -> dict:
    return {"size": _number(body, "size") or 8, "black": _text(body, "black") or "you",
            "white": _text(body, "white") or "you", "sims": _number(body, "sims"),
            "seconds": _number(body, "seconds", float)}


def create_app(table: GameTable, hosts: list[str] | None = None) -> Starlette:
    """The ASGI app serving ``table``'s games and the page; ``hosts``: the only Host headers it
    answers (the local names when it listens on this machine only, so that a web page elsewhere
    cannot reach it by DNS rebinding), None for any."""

    def game_call(call: Callable[[WebGame, dict], None]) -> Callable:
        async def endpoint(request: Request) -> Response:
            body = await _body(request)
            game = await run_in_threadpool(table.get, request.path_params["game_id"])
            await run_in_threadpool(call, game, body)
            return JSONResponse(await run_in_threadpool(game.view))

        return endpoint

    async def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    async def engines(request: Request) -> Response:
        lineup = table.lineup
        return JSONResponse({"engines": lineup.describe(), "sims": lineup.sims, "seconds": lineup.seconds,
                             "exact_empties": {str(k): v for k, v in lineup.exact_empties.items()}})

    async def create(request: Request) -> Response:
        options = _new_options(await _body(request))

        def make() -> dict:
            game = table.create()
            try:
                game.new(**options)
            except WebRequestError:
                table.games.pop(game.id, None)
                raise
            return game.view()

        return JSONResponse(await run_in_threadpool(make), status_code=201)

    async def view(request: Request) -> Response:
        game = await run_in_threadpool(table.get, request.path_params["game_id"])
        return JSONResponse(await run_in_threadpool(game.view))

    async def record(request: Request) -> Response:
        game = await run_in_threadpool(table.get, request.path_params["game_id"])
        text = await run_in_threadpool(game.record)
        return PlainTextResponse(text, headers={"Content-Disposition": f'attachment; filename="othello-{game.id}.ggf"'})

    actions = {
        "new": lambda game, body: game.new(**_new_options(body)),
        "move": lambda game, body: game.move(_text(body, "square")),
        "undo": lambda game, body: game.undo(),
        "redo": lambda game, body: game.redo_moves(),
        "hint": lambda game, body: game.hint(),
        "load": lambda game, body: game.load(_text(body, "text")),
    }
    routes = [
        Route("/", index),
        Route("/api/engines", engines),
        Route("/api/games", create, methods=["POST"]),
        Route("/api/games/{game_id}", view),
        Route("/api/games/{game_id}/record", record),
        *(Route(f"/api/games/{{game_id}}/{name}", game_call(call), methods=["POST"]) for name, call in actions.items()),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]

    async def request_error(request: Request, error: Exception) -> Response:
        return _error(getattr(error, "status", 400), str(error))

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        message = {404: f"no such page or API call: {request.url.path}",
                   405: f"{request.method} is not allowed on {request.url.path}"}.get(error.status_code, error.detail)
        return _error(error.status_code, message)

    async def bug(request: Request, error: Exception) -> Response:
        traceback.print_exception(error, file=sys.stderr)
        return _error(500, f"internal error (a bug, please report it): {type(error).__name__}: {first_line(error)}; "
                           "the traceback is on the server's standard error")

    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=hosts)] if hosts else []
    return Starlette(routes=routes, middleware=middleware,
                     exception_handlers={WebRequestError: request_error, HTTPException: http_error, Exception: bug})
