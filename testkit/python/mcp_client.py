"""An MCP host for the tests, on the official Python SDK (`mcp`): connects to an MCP server
over streamable HTTP or SSE, then answers one JSON line on stdout per JSON line on stdin.

    mcp_client.py shttp|sse URL [HEADERS_JSON]

First line out: {"connected": SERVER_NAME} or {"failed": WHY}. Requests: {"op": "list"} ->
{"tools": [...]}; {"op": "call", "name": N, "args": {...}} -> the CallToolResult as JSON, or
{"exception": WHY}.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamablehttp_client


def emit(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def describe(error):
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(e) for e in error.exceptions)
    return f"{type(error).__name__}: {error}"


async def serve(session):
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        request = json.loads(line)
        try:
            if request["op"] == "list":
                tools = await session.list_tools()
                emit({"tools": [t.model_dump(mode="json", by_alias=True) for t in tools.tools]})
            else:
                result = await session.call_tool(request["name"], request.get("args", {}))
                emit(result.model_dump(mode="json", by_alias=True))
        except Exception as error:  # noqa: BLE001 - the test reads what went wrong
            emit({"exception": describe(error)})


async def main():
    transport, url = sys.argv[1], sys.argv[2]
    headers = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    connect = sse_client if transport == "sse" else streamablehttp_client
    try:
        async with connect(url, headers=headers) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                info = await asyncio.wait_for(session.initialize(), 30)
                emit({"connected": info.serverInfo.name})
                await serve(session)
    except BaseException as error:  # noqa: BLE001
        emit({"failed": describe(error)})


asyncio.run(main())
