"""An MCP server for the tests, on the official Python SDK (FastMCP).

    mcp_server.py NAME            stdio
    mcp_server.py NAME --http     streamable HTTP on 127.0.0.1, a free port; the first line on
                                  stdout is "listening on http://127.0.0.1:PORT/mcp"

Tools: echo, whoami (uid, pid, process group, cwd, $DEMO_ENV), image (a 1x1 PNG), fail (a
tool error), slow (sleeps), crash (writes to stderr and exits at once, mid-call).
"""

import base64
import json
import os
import socket
import sys
import time

from mcp.server.fastmcp import FastMCP, Image

NAME = sys.argv[1] if len(sys.argv) > 1 else "demo"
server = FastMCP(NAME)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@server.tool()
def echo(text: str) -> str:
    """Say the text back, with the server's name."""
    return f"{NAME} says {text}"


@server.tool()
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


@server.tool()
def image() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


@server.tool()
def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    time.sleep(seconds)
    return "done"


@server.tool()
def crash(message: str) -> str:
    """Writes the message to stderr and exits at once."""
    print(message, file=sys.stderr, flush=True)
    os._exit(3)


def serve_http():
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    print(f"{NAME} starting", file=sys.stderr, flush=True)
    if "--http" in sys.argv:
        serve_http()
    else:
        server.run()
