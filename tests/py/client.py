"""A real MCP client (the Python `mcp` SDK: ClientSession over stdio_client) for mcpjail's tests.

Usage: client.py [--script FILE] -- COMMAND [ARGS...]

Starts COMMAND (a server, or mcpjail-proxy in front of one) with exactly this process's
environment, performs the SDK's initialize handshake, runs the steps of a JSON script (from FILE,
or stdin when no --script is given) and prints one JSON object per line to stdout:

  {"initialize": InitializeResult}            (or {"initialize": DiscoverResult, "era": "modern"})
  {"step": i, "tools": [Tool, ...]}           for {"call": "tools/list"} (all pages)
  {"step": i, "result": CallToolResult}       for {"tool": NAME, "arguments": {...}}
  {"step": i, "result": ReadResourceResult}   for {"call": "resources/read", "uri": URI}
  {"step": i, "result": {}}                   for {"call": "ping"}
  {"step": i, "roots": [...]}                 for {"set_roots": [PATH or URI, ...]}
  {"step": i, "error": {"code", "message", "data"}}   when the request got a JSON-RPC error
  {"step": i, "client_error": "..."}          when the SDK itself rejected the answer
  {"done": true, "roots_requests": N}

Script: {"roots": [PATH or URI, ...] (optional; advertises the roots capability), "timeout": S,
"wait_initial_roots": bool, "steps": [...]}. `set_roots` replaces the roots and sends
notifications/roots/list_changed. Roots replies race with later steps, so a test can wait:
"wait_initial_roots": true waits after initialize until the first roots/list request has been
answered, and {"set_roots": [...], "wait_roots": true} waits until the next one has. A server
may apply new roots asynchronously after that, so a tool step can repeat itself until its text
contains a string: {"tool": ..., "until_text": "...", "max_tries": N} (the result line then
carries "tries"; without a match the last result is printed). "era": "modern" connects with the
stateless 2026-07-28 core (`server/discover`, per-request `_meta`) instead of `initialize`.
Results are printed in the wire's camelCase shape so the Rust tests read one format from both
clients. The server's stderr is inherited, so it interleaves with this driver's own stderr.
"""

import json
import os
import sys
import warnings
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

# Roots are deprecated in the 2026-07-28 era but still what handshake-era servers use.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


def as_uri(root: str) -> str:
    return root if root.startswith("file://") else Path(root).as_uri()


def dump(model) -> dict:
    # exclude_unset: print what came over the wire, not the SDK model's defaults.
    return model.model_dump(by_alias=True, mode="json", exclude_unset=True)


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def parse_args(argv: list[str]) -> tuple[dict, list[str]]:
    if "--" not in argv:
        sys.exit("usage: client.py [--script FILE] -- COMMAND [ARGS...]")
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1 :]
    if not command:
        sys.exit("client.py: no server command after --")
    if opts[:1] == ["--script"] and len(opts) == 2:
        script = json.loads(Path(opts[1]).read_text())
    elif not opts:
        script = json.load(sys.stdin)
    else:
        sys.exit(f"client.py: unknown options {opts}")
    return script, command


async def run(script: dict, command: list[str]) -> None:
    roots: list[str] | None = script.get("roots")
    roots_requests = 0
    roots_answered = anyio.Event()

    async def list_roots(_context) -> types.ListRootsResult:
        nonlocal roots_requests
        roots_requests += 1
        # Set after this reply is built; a waiter resumes once the dispatcher has sent it.
        roots_answered.set()
        return types.ListRootsResult(roots=[types.Root(uri=as_uri(r)) for r in roots or []])

    async def wait_roots_request(seen: int) -> None:
        nonlocal roots_answered
        while roots_requests <= seen:
            await roots_answered.wait()
            roots_answered = anyio.Event()

    # An explicit env: without it stdio_client hands the server only a small default set,
    # and the test's own variables (HOME, MEMORY_FILE_PATH, ...) would silently vanish.
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        session_kwargs = {"list_roots_callback": list_roots} if roots is not None else {}
        async with ClientSession(read, write, **session_kwargs) as session:
            if script.get("era") == "modern":
                emit({"initialize": dump(await session.discover()), "era": "modern"})
            else:
                emit({"initialize": dump(await session.initialize())})
            if script.get("wait_initial_roots"):
                await wait_roots_request(0)
            for i, step in enumerate(script.get("steps", [])):
                try:
                    emit({"step": i, **await run_step(session, step)})
                except MCPError as err:
                    emit({"step": i, "error": {"code": err.code, "message": err.message, "data": err.data}})
                except Exception as err:  # noqa: BLE001 - the test reads and judges it
                    # E.g. a result the SDK's own validation refuses: report it for this step and
                    # go on, so the test names the step instead of seeing a crashed driver.
                    emit({"step": i, "client_error": f"{type(err).__name__}: {err}"})
                if "set_roots" in step:
                    roots = step["set_roots"]
                    seen = roots_requests
                    await session.send_roots_list_changed()
                    if step.get("wait_roots"):
                        await wait_roots_request(seen)
    emit({"done": True, "roots_requests": roots_requests})


async def run_step(session: ClientSession, step: dict) -> dict:
    if "tool" in step:
        tries = 0
        while True:
            tries += 1
            try:
                result = dump(await session.call_tool(step["tool"], step.get("arguments", {})))
            except MCPError:
                # While repeating, an error (e.g. a request caught in a server respawn) is one
                # more try, not the end of the step.
                if "until_text" not in step or tries >= step.get("max_tries", 200):
                    raise
                continue
            if "until_text" not in step:
                return {"result": result}
            text = "\n".join(c.get("text", "") for c in result.get("content", []))
            if step["until_text"] in text or tries >= step.get("max_tries", 200):
                return {"result": result, "tries": tries}
    if "set_roots" in step:
        return {"roots": [as_uri(r) for r in step["set_roots"]]}
    call = step.get("call")
    if call == "tools/list":
        tools, cursor = [], None
        while True:
            page = await session.list_tools(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            tools.extend(dump(t) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                return {"tools": tools}
    if call == "resources/read":
        return {"result": dump(await session.read_resource(step["uri"]))}
    if call == "ping":
        await session.send_ping()
        return {"result": {}}
    raise SystemExit(f"client.py: unknown step {json.dumps(step)}")


def main() -> None:
    script, command = parse_args(sys.argv[1:])
    timeout = float(script.get("timeout", 60))

    async def bounded() -> None:
        # A hung server or proxy must fail the test, not block CI.
        with anyio.fail_after(timeout):
            await run(script, command)

    anyio.run(bounded)


if __name__ == "__main__":
    main()
