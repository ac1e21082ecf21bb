"""A minimal MCP server for comparison in benches/mcp.rs: an `execute` tool that runs
Python with exec() in this process (no kernel, no policy, no sandbox), built with the
official Python SDK. Run: python exec_server.py (stdio)."""
import contextlib
import io

from mcp.server.mcpserver import MCPServer

server = MCPServer("exec-server")
scope: dict = {}


@server.tool()
def execute(language: str, code: str) -> str:
    """Run Python code in this process and return what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, scope)
    return out.getvalue()


if __name__ == "__main__":
    server.run()
