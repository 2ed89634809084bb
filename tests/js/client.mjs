// A real MCP client (the TypeScript SDK: Client over StdioClientTransport) for mcpjail's tests.
//
// Usage: node client.mjs [--script FILE] -- COMMAND [ARGS...]
//
// The same contract as tests/py/client.py: start COMMAND with exactly this process's
// environment, initialize, run the JSON script's steps (from FILE or stdin) and print one JSON
// object per line:
//
//   {"initialize": {protocolVersion, capabilities, serverInfo, instructions?}}
//   {"step": i, "tools": [...]}        for {"call": "tools/list"} (all pages)
//   {"step": i, "result": {...}}       for {"tool": NAME, "arguments": {...}},
//                                      {"call": "resources/read", "uri": URI}, {"call": "ping"}
//   {"step": i, "roots": [...]}        for {"set_roots": [PATH or URI, ...]}
//   {"step": i, "error": {code, message, data}}   when the request got a JSON-RPC error
//   {"step": i, "client_error": "..."}   when the SDK itself rejected the answer
//   {"done": true, "roots_requests": N}
//
// Script options as in client.py: "roots", "timeout", "wait_initial_roots", and "wait_roots" on
// a set_roots step (wait until the server asked for the roots and got the answer), and
// "until_text"/"max_tries" on a tool step (repeat until the result text contains the string).
//
// The SDK is loaded from .test-env/node (installed by scripts/test-deps.sh), not from a
// node_modules next to this file, so the driver never needs its own install step.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules =
  process.env.MCPJAIL_TEST_NODE_MODULES ?? join(here, "..", "..", ".test-env", "node", "node_modules");
const sdk = (rel) => import(pathToFileURL(join(modules, "@modelcontextprotocol", "sdk", "dist", "esm", rel)).href);

const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { ListRootsRequestSchema, McpError } = await sdk("types.js");

function usage(msg) {
  process.stderr.write(`client.mjs: ${msg}\nusage: node client.mjs [--script FILE] -- COMMAND [ARGS...]\n`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 0) usage("missing -- before the server command");
const opts = argv.slice(0, split);
const command = argv.slice(split + 1);
if (command.length === 0) usage("no server command after --");
let scriptText;
if (opts.length === 2 && opts[0] === "--script") scriptText = readFileSync(opts[1], "utf8");
else if (opts.length === 0) scriptText = readFileSync(0, "utf8");
else usage(`unknown options ${JSON.stringify(opts)}`);
const script = JSON.parse(scriptText);

const asUri = (root) => (root.startsWith("file://") ? root : pathToFileURL(root).href);
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

// A hung server or proxy must fail the test, not block CI.
const timeoutMs = (script.timeout ?? 60) * 1000;
const timer = setTimeout(() => {
  process.stderr.write(`client.mjs: timed out after ${timeoutMs} ms\n`);
  process.exit(3);
}, timeoutMs);

let roots = script.roots ?? null;
let rootsRequests = 0;
let rootsWaiters = [];
// Resolves once more than `seen` roots/list requests have been answered.
const waitRootsRequest = (seen) =>
  rootsRequests > seen ? Promise.resolve() : new Promise((resolve) => rootsWaiters.push({ seen, resolve }));
const client = new Client(
  { name: "mcpjail-test-ts", version: "0.0.0" },
  { capabilities: roots === null ? {} : { roots: { listChanged: true } } },
);
if (roots !== null) {
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    rootsRequests += 1;
    const reply = { roots: roots.map((r) => ({ uri: asUri(r) })) };
    // Wake waiters after the reply is on its way (the handler's return sends it).
    const ready = rootsWaiters.filter((w) => rootsRequests > w.seen);
    rootsWaiters = rootsWaiters.filter((w) => rootsRequests <= w.seen);
    setImmediate(() => ready.forEach((w) => w.resolve()));
    return reply;
  });
}

// An explicit env: the SDK otherwise hands the server only a small default set, and the
// test's own variables (HOME, MEMORY_FILE_PATH, ...) would silently vanish.
const transport = new StdioClientTransport({
  command: command[0],
  args: command.slice(1),
  env: { ...process.env },
  stderr: "inherit",
});
// The SDK keeps no copy of the negotiated version; it tells transports that want it.
let protocolVersion = null;
transport.setProtocolVersion = (v) => {
  protocolVersion = v;
};

const requestOptions = { timeout: timeoutMs };
await client.connect(transport, requestOptions);
emit({
  initialize: {
    protocolVersion,
    capabilities: client.getServerCapabilities(),
    serverInfo: client.getServerVersion(),
    ...(client.getInstructions() ? { instructions: client.getInstructions() } : {}),
  },
});

if (script.wait_initial_roots) await waitRootsRequest(0);

async function runStep(step) {
  if ("tool" in step) {
    for (let tries = 1; ; tries++) {
      let result;
      try {
        result = await client.callTool({ name: step.tool, arguments: step.arguments ?? {} }, undefined, requestOptions);
      } catch (err) {
        // While repeating, an error (e.g. a request caught in a server respawn) is one more try.
        if (!("until_text" in step) || !(err instanceof McpError) || tries >= (step.max_tries ?? 200)) throw err;
        continue;
      }
      if (!("until_text" in step)) return { result };
      const text = (result.content ?? []).map((c) => c.text ?? "").join("\n");
      if (text.includes(step.until_text) || tries >= (step.max_tries ?? 200)) return { result, tries };
    }
  }
  if ("set_roots" in step) {
    return { roots: step.set_roots.map(asUri) };
  }
  switch (step.call) {
    case "tools/list": {
      const tools = [];
      let cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, requestOptions);
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return { tools };
    }
    case "resources/read":
      return { result: await client.readResource({ uri: step.uri }, requestOptions) };
    case "ping":
      return { result: await client.ping(requestOptions) };
    default:
      usage(`unknown step ${JSON.stringify(step)}`);
  }
}

for (const [i, step] of (script.steps ?? []).entries()) {
  try {
    emit({ step: i, ...(await runStep(step)) });
  } catch (err) {
    // McpError also covers the SDK's own result checks (e.g. a missing structuredContent); the
    // message says which, and either way the test sees this step fail.
    if (err instanceof McpError) {
      const message = err.message.replace(/^MCP error -?\d+: /, "");
      emit({ step: i, error: { code: err.code, message, data: err.data ?? null } });
    } else {
      // E.g. a result the SDK's own validation refuses: report it for this step and go on.
      emit({ step: i, client_error: `${err?.name ?? "Error"}: ${err?.message ?? err}` });
    }
  }
  if ("set_roots" in step) {
    roots = step.set_roots;
    const seen = rootsRequests;
    await client.sendRootsListChanged();
    if (step.wait_roots) await waitRootsRequest(seen);
  }
}

emit({ done: true, roots_requests: rootsRequests });
await client.close();
clearTimeout(timer);
