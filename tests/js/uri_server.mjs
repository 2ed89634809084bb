// An honest MCP server that takes `file:` URIs the way Node servers do: `fileURLToPath(new URL(uri))`
// (the WHATWG URL parser), then reads or writes. tests/proxy_checks.rs runs it behind the proxy
// and directly (the control) to show the proxy checks the path this parser opens.
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const toPath = (uri) => fileURLToPath(new URL(uri));
const send = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const uri = { type: "string", format: "uri" };
const tools = [
  { name: "read_uri", description: "Read the file a file URI names",
    inputSchema: { type: "object", properties: { uri }, required: ["uri"] } },
  { name: "write_uri", description: "Write the file a file URI names (creating its directories)",
    inputSchema: { type: "object", properties: { uri, content: { type: "string" } }, required: ["uri", "content"] } },
];
const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], isError });

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  const { id, method, params } = m;
  if (id === undefined) return;
  const answer = (result) => send({ jsonrpc: "2.0", id, result });
  try {
    if (method === "initialize") {
      return answer({ protocolVersion: params.protocolVersion, capabilities: { tools: {}, resources: {} },
                      serverInfo: { name: "uri-server", version: "1" } });
    }
    if (method === "tools/list") return answer({ tools });
    if (method === "resources/read") {
      return answer({ contents: [{ uri: params.uri, text: fs.readFileSync(toPath(params.uri), "utf8") }] });
    }
    if (method === "tools/call") {
      const p = toPath(params.arguments.uri);
      if (params.name === "read_uri") return answer(text(fs.readFileSync(p, "utf8")));
      if (params.name === "write_uri") {
        fs.mkdirSync(path.dirname(p), { recursive: true });
        fs.writeFileSync(p, params.arguments.content);
        return answer(text(`wrote ${p}`));
      }
    }
    answer({});
  } catch (e) {
    answer(text(`ERR ${e.message}`, true));
  }
});
