"""The HTTP face of `serve`: POST /transfer and GET /health, over a Relay."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from .account import answer
from .relay import Relay

MAX_BODY = 16 * 1024  # larger bodies are malformed (E400), not a 413


def make_app(make_relay: Callable[[], Relay]) -> web.Application:
    """An app whose Relay is built inside the event loop (its HTTP client needs one)."""
    app = web.Application(client_max_size=MAX_BODY)
    relays: list[Relay] = []

    async def start(app: web.Application) -> None:
        relays.append(make_relay())

    async def stop(app: web.Application) -> None:
        await relays[0].account.close()

    async def post_transfer(request: web.Request) -> web.Response:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.json_response(text=answer(None, "E400", "request too large"), status=400)
        status, body = await relays[0].transfer(raw)
        return web.json_response(text=body, status=status)

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    app.router.add_post("/transfer", post_transfer)
    app.router.add_get("/health", health)
    return app
