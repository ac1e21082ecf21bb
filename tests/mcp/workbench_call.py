"""One `execute` call to the open workbench's MCP server, as another agent makes it (driven from
tests/suite/mcp_workbench.rs). Usage: workbench_call.py URL TOKEN LANGUAGE CODE OUT: calls
`execute` as "claude-code" and writes the result (structured content and text) and the
server's instructions to OUT as JSON, then prints `OK`."""
import json
import sys

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation


async def main(url, token, language, code, out):
    headers = {"Authorization": f"Bearer {token}"}
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with Client(transport, mode="legacy", client_info=Implementation(name="claude-code", version="1")) as c:
        r = await c.call_tool("execute", {"language": language, "code": code})
        text = "".join(getattr(part, "text", "") for part in r.content)
        with open(out, "w") as f:
            json.dump({"structured": r.structured_content, "text": text, "is_error": r.is_error,
                       "instructions": c.instructions}, f)
    print("OK")


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:6])
