"""An MCP server for the tests, on the official Python SDK (FastMCP).

    mcp_server.py NAME            stdio
    mcp_server.py NAME --http     streamable HTTP on 127.0.0.1, a free port; the first line on
                                  stdout is "listening on http://127.0.0.1:PORT/mcp"
    mcp_server.py NAME --sse      HTTP with SSE, the same way ("listening on .../sse")

Tools: echo, whoami (uid, pid, process group, cwd, $DEMO_ENV), image (a 1x1 PNG), fail (a
tool error), slow (sleeps), crash (writes to stderr and exits at once, mid-call); each name
prefixed with $TOOL_PREFIX when set.
"""

import base64
import json
import os
import socket
import sys
import time

from mcp.server.fastmcp import FastMCP, Image

NAME = sys.argv[1] if len(sys.argv) > 1 else "demo"
PREFIX = os.environ.get("TOOL_PREFIX", "")
server = FastMCP(NAME)


def tool(function):
    return server.tool(name=PREFIX + function.__name__)(function)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@tool
def echo(text: str) -> str:
    """Say the text back, with the server's name."""
    return f"{NAME} says {text}"


@tool
def whoami() -> str:
    """Who and where the server runs."""
    return json.dumps(
        {
            "uid": os.getuid(),
            "pid": os.getpid(),
            "pgid": os.getpgid(0),
            "cwd": os.getcwd(),
            "env": os.environ.get("DEMO_ENV", ""),
        }
    )


@tool
def image() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG, format="png")


@tool
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


@tool
def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    time.sleep(seconds)
    return "done"


@tool
def crash(message: str) -> str:
    """Writes the message to stderr and exits at once."""
    print(message, file=sys.stderr, flush=True)
    os._exit(3)


def serve_http(app, path):
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}{path}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    print(f"{NAME} starting", file=sys.stderr, flush=True)
    if "--http" in sys.argv:
        serve_http(server.streamable_http_app(), "/mcp")
    elif "--sse" in sys.argv:
        serve_http(server.sse_app(), "/sse")
    else:
        server.run()
