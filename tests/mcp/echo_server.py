"""An MCP server for oi-tui's client tests (Python MCP SDK 2.x, MCPServer, stdio).

Usage: python echo_server.py [normal|never-starts|fails-to-start]
       python echo_server.py http PORT TOKEN   (Streamable HTTP on 127.0.0.1:PORT/mcp, which
                                                 needs "Authorization: Bearer TOKEN")

Tools: echo(text) -> the text; add(a, b) -> structured content; picture() -> a PNG;
crash() -> the process exits in the middle of the call; hang() -> never returns.
Every call is written to a file in $CALLS_DIR (one file per call, named after the tool), so
that a test can tell whether a call reached the server. `never-starts` blocks before the
handshake; `fails-to-start` raises during it (with a message on stderr).
"""

import base64
import os
import sys
import time
from contextlib import asynccontextmanager

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Image, MCPServer

CALLS = os.environ.get("CALLS_DIR")


def called(tool: str, detail: str = "") -> None:
    if CALLS:
        name = f"{tool}-{time.time_ns()}"
        with open(os.path.join(CALLS, name), "w") as f:
            f.write(detail)


@asynccontextmanager
async def never(_server):
    print("loading forever", file=sys.stderr, flush=True)
    await anyio.sleep(3600)
    yield {}


@asynccontextmanager
async def broken(_server):
    raise RuntimeError("the echo config is missing")
    yield {}


MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
LIFESPAN = {"never-starts": never, "fails-to-start": broken}.get(MODE)
mcp = MCPServer("echo", lifespan=LIFESPAN) if LIFESPAN else MCPServer("echo")


@mcp.tool(description="Echo the text back, with a greeting.")
def echo(text: str) -> str:
    called("echo", text)
    return f"echo: {text}"


class Sum(BaseModel):
    total: int


@mcp.tool(description="Add two integers.")
def add(a: int, b: int) -> Sum:
    called("add", f"{a}+{b}")
    return Sum(total=a + b)


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@mcp.tool(description="A tiny picture.")
def picture() -> Image:
    called("picture")
    return Image(data=PNG, format="png")


@mcp.tool(description="Exits the server in the middle of the call.")
async def crash() -> str:
    called("crash")
    print("about to crash", file=sys.stderr, flush=True)
    await anyio.sleep(0.2)
    os._exit(3)


@mcp.tool(description="Never returns.")
async def hang() -> str:
    called("hang")
    try:
        await anyio.sleep(3600)
    except BaseException:
        called("hang_cancelled")
        raise
    return "unreachable"


def serve_http(port: int, token: str) -> None:
    import uvicorn

    app = mcp.streamable_http_app()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="echo"')]})
                await send({"type": "http.response.body", "body": b'{"error":"unauthorized"}'})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if MODE == "http":
        serve_http(int(sys.argv[2]), sys.argv[3])
    else:
        mcp.run("stdio")
