"""Checks of `oi-tui mcp` with the official Python MCP SDK client (driven from
tests/suite/mcp_server.rs). Usage: checks.py SCENARIO. The environment says where:
  MCP_URL + MCP_TOKEN  -> Streamable HTTP at that URL,
  else OI_TUI_BIN + OI_TUI_ARGS (JSON list) -> `oi-tui ... mcp ...` over stdio;
  MCP_MODE = legacy | auto (the client's protocol negotiation), WORK_DIR = the server's
  working directory. Each scenario asserts, and prints `OK SCENARIO` at its end."""
import json
import os
import sys
import urllib.error
import urllib.request

import anyio
from mcp import Client
from mcp.client import advertise
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import ElicitResult, Implementation

MODE = os.environ.get("MCP_MODE", "legacy")
URL = os.environ.get("MCP_URL")
TOKEN = os.environ.get("MCP_TOKEN", "")
WORK = os.environ.get("WORK_DIR", ".")
TASKS = "io.modelcontextprotocol/tasks"


def transport(token=None):
    if URL:
        headers = {"Authorization": f"Bearer {TOKEN if token is None else token}"}
        return streamable_http_client(URL, http_client=create_mcp_http_client(headers=headers))
    args = json.loads(os.environ["OI_TUI_ARGS"])
    return StdioServerParameters(command=os.environ["OI_TUI_BIN"], args=args, cwd=WORK, env=dict(os.environ))


def client(name="claude-code", **kw):
    return Client(transport(), mode=MODE, client_info=Implementation(name=name, version="1"), **kw)


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def run(c, code, language="python", **kw):
    return await c.call_tool("execute", {"language": language, "code": code}, **kw)


async def basics():
    async with client() as c:
        assert c.server_info.name == "oi-tui", c.server_info
        assert "execute" in (c.instructions or ""), c.instructions
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == {"execute", "languages", "interrupt", "reset"}, tools
        ex = tools["execute"]
        assert set(ex.input_schema["required"]) == {"language", "code"}, ex.input_schema
        assert "timeout_secs" in ex.input_schema["properties"], ex.input_schema
        assert ex.output_schema and "state_lost" in ex.output_schema["properties"], ex.output_schema
        r = await run(c, "x = 6 * 7\nprint(x)")
        assert r.is_error is False, r
        s = r.structured_content
        assert s["ran"] is True and s["status"] == "ran" and s["output"] == "42\n", s
        assert s["exit_code"] == 0 and s["state_lost"] is False and s["edited"] is False, s
        assert text_of(r).startswith("42\n"), text_of(r)
        r = await run(c, "print(x + 1)")
        assert r.structured_content["output"] == "43\n", r.structured_content
        r = await run(c, "exit 3", language="shell")
        assert r.is_error is False and r.structured_content["exit_code"] == 3, r.structured_content
        langs = (await c.call_tool("languages", {})).structured_content["languages"]
        python = [l for l in langs if l["name"] == "python"][0]
        assert python["available"] and python["version"].lower().startswith("python 3"), python
        seen = []

        async def on_progress(progress, total, message):
            seen.append(message)

        r = await run(c, "import time\nfor i in range(3):\n    print('line', i, flush=True); time.sleep(0.3)",
                      progress_callback=on_progress)
        assert r.structured_content["output"] == "line 0\nline 1\nline 2\n", r.structured_content
        # Output so far arrives while the block runs (a line may come in pieces).
        assert any("line 0" in m and "line 2" not in m for m in seen), seen
        r = await c.call_tool("reset", {"language": "python"})
        assert r.is_error is False, r
        r = await run(c, "print('x' in globals())")
        assert r.structured_content["output"] == "False\n", r.structured_content
        r = await c.call_tool("reset", {"language": "cobol"})
        assert r.is_error is True and "cobol" in text_of(r), r


async def denied():
    async with client() as c:
        r = await run(c, "touch denied.txt", language="shell")
        assert r.is_error is True, r
        s = r.structured_content
        assert s["ran"] is False and s["status"] == "denied", s
        await anyio.sleep(0.3)
        assert not os.path.exists(os.path.join(WORK, "denied.txt")), "a denied block ran"


def answering(action, approve=None, asked=None):
    async def callback(context, params):
        if asked is not None:
            asked.append(params.message)
        if action == "accept":
            return ElicitResult(action="accept", content={"approve": approve})
        return ElicitResult(action=action)
    return callback


async def elicit_accept():
    asked = []
    async with client(elicitation_callback=answering("accept", True, asked)) as c:
        r = await run(c, "open('accepted.txt', 'w').write('yes'); print('wrote')")
        assert r.is_error is False and r.structured_content["output"] == "wrote\n", r
        assert asked and "claude-code" in asked[0] and "accepted.txt" in asked[0], asked
        assert os.path.exists(os.path.join(WORK, "accepted.txt"))


async def elicit_decline():
    async with client(elicitation_callback=answering("decline")) as c:
        r = await run(c, "open('declined.txt', 'w').write('no')")
        assert r.is_error is True and r.structured_content["status"] == "skipped", r.structured_content
        assert "declined" in text_of(r), text_of(r)
    async with client(elicitation_callback=answering("accept", False)) as c:
        r = await run(c, "open('declined.txt', 'w').write('no')")
        assert r.is_error is True, r
    assert not os.path.exists(os.path.join(WORK, "declined.txt"))


async def no_elicitation():
    async with client() as c:
        r = await run(c, "open('refused.txt', 'w').write('no')")
        assert r.is_error is True, r
        s = r.structured_content
        assert s["status"] == "declined", s
        assert "--approval rules" in s["reason"] and "--approval auto" in s["reason"], s
    assert not os.path.exists(os.path.join(WORK, "refused.txt"))


async def cancel():
    async with client() as c:
        await run(c, "kept = 'survived'")
        with anyio.move_on_after(1.5) as scope:
            await run(c, "import time\nprint('start', flush=True)\ntime.sleep(60)")
        assert scope.cancelled_caught
        r = await run(c, "print(kept)")
        assert r.structured_content["output"] == "survived\n", r.structured_content


async def raw(c, method, params):
    session = c.session
    data = {"method": method, "params": params}
    opts = {}
    session._stamp(data, opts)  # private in SDK 2.3, which has no API for SEP-2663 tasks
    if method.startswith("tasks/"):
        opts.setdefault("headers", {})["Mcp-Name"] = params["taskId"]
    return await session._dispatcher.send_raw_request(method, data["params"], opts)


async def task():
    async with Client(transport(), mode=MODE, extensions=[advertise(TASKS)]) as c:
        assert TASKS in (c.server_capabilities.extensions or {}), c.server_capabilities
        created = await raw(c, "tools/call", {"name": "execute", "arguments": {
            "language": "python", "code": "import time\nprint('begun', flush=True)\ntime.sleep(1)\nprint('done')"}})
        assert created["resultType"] == "task" and created["status"] == "working", created
        polls = 0
        for _ in range(200):
            got = await raw(c, "tasks/get", {"taskId": created["taskId"]})
            if got["status"] != "working":
                break
            polls += 1
            await anyio.sleep(0.1)
        assert got["status"] == "completed", got
        assert polls >= 2, polls
        out = got["result"]["structuredContent"]
        assert out["output"] == "begun\ndone\n" and out["ran"] is True, out
        created = await raw(c, "tools/call", {"name": "execute", "arguments": {
            "language": "python", "code": "import time\ntime.sleep(60)"}})
        await anyio.sleep(0.5)
        await raw(c, "tasks/cancel", {"taskId": created["taskId"]})
        for _ in range(50):
            got = await raw(c, "tasks/get", {"taskId": created["taskId"]})
            if got["status"] != "working":
                break
            await anyio.sleep(0.1)
        assert got["status"] == "cancelled", got


def post(headers):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).encode()
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers)
    req = urllib.request.Request(URL, data=body, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read(300).decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


async def http_guards():
    status, body = post({})
    assert status == 401 and "bearer token" in body, (status, body)
    status, body = post({"Authorization": "Bearer wrong"})
    assert status == 401 and "wrong" in body, (status, body)
    status, body = post({"Authorization": f"Bearer {TOKEN}", "Origin": "https://evil.example"})
    assert status == 403 and "Origin" in body, (status, body)
    status, body = post({"Authorization": f"Bearer {TOKEN}", "Origin": "http://localhost:5173"})
    assert status == 200, (status, body)
    # The SDK client without the token does not get in.
    try:
        async with Client(transport(token="wrong"), mode=MODE) as c:
            await c.list_tools()
        raise AssertionError("a wrong token was accepted")
    except BaseException as e:  # an ExceptionGroup from the SDK
        if isinstance(e, AssertionError):
            raise


async def two_clients():
    results = {}

    async def work(name, value):
        async with client(name=name) as c:
            await run(c, f"mine = {value!r}")
            await anyio.sleep(0.5)
            r = await run(c, "print(mine)")
            results[name] = r.structured_content["output"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(work, "claude-code", "first")
        tg.start_soon(work, "codex", "second")
    assert results == {"claude-code": "first\n", "codex": "second\n"}, results


SCENARIOS = {f.__name__: f for f in [basics, denied, elicit_accept, elicit_decline, no_elicitation, cancel,
                                     task, http_guards, two_clients]}

if __name__ == "__main__":
    name = sys.argv[1]
    anyio.run(SCENARIOS[name])
    print(f"OK {name}")
