// Writes src/policy/testdata/node_file_urls.json: what Node's WHATWG URL parser and
// `fileURLToPath` make of each input (the path, or null when Node throws). The unit tests of
// `policy::file_url` compare the proxy's reading with this table.
// Regenerate: node tests/js/file_url_table.mjs > src/policy/testdata/node_file_urls.json
import { fileURLToPath } from "node:url";

const inputs = [
  "file:///P/a.txt", "FILE:///P/a.txt", "File:///P/a.txt", "file://localhost/P/a.txt",
  "file://LOCALHOST/P/a.txt", "file://LocalHost/P/a.txt", "file://%6Cocalhost/P/a.txt",
  "file:/P/a.txt", "file:\\P\\a.txt", "file:\\\\\\P\\a.txt", "file:/\\P/a.txt", "file:\\/P/a.txt",
  "file:///P/l1/l2/l3/l4/x\\..\\.env", "file:///P/x\\..\\.vscode\\tasks.json",
  "file:///P/.clau\tde/settings.json", "file:///P/.mc\np.json", "file:///P/.mc\rp.json",
  " file:///P/.env", "\u0001file:///P/.env", "\u001ffile:///P/.env ", "file:///P/.env \u0000",
  "fi\tle:///P/.env", "f\ni\rl\te:///P/.env", "\tfile:///P/.env", "file:/\t//P/.env",
  "file:///P/x/%2e%2e/.env", "file:///P/x/%2E%2E/.env", "file:///P/x/.%2e/.env",
  "file:///P/x/%2e./.env", "file:///P/x/./.env", "file:///P/x/%2e/.env", "file:///P/x/..",
  "file:///P/x/.", "file:///P/x/%2e", "file:///P/x/%2e%2e", "file:///..", "file:///../../etc",
  "file:///P/x/...", "file:///P/x/.%2e%2e", "file:///P/a%20b", "file:///P/a b",
  "file:///P/%C3%A9", "file:///P/é", "file:///P/a%zz", "file:///P/x%2Fy",
  "file:///P/%2e%2e%2Fx", "file:///C:/x", "file:///C|/x", "file:///C:/../x", "file://C:/x",
  "file://C|/x", "file:C:/x", "file:///c:/x/../..", "file:///P//a", "file:///P/a/",
  "file://", "file:///", "file:/", "file:", "file://evil.example/etc/passwd",
  "file://localhost./P/a", "file://127.0.0.1/P/a", "file:///P/a?x", "file:///P/a#x",
  "file:///P/.%65nv", "file:///P/%2Eenv", "file:///P/a\\b\\..\\..\\c",
];
const rows = inputs.map((input) => {
  try { return [input, fileURLToPath(new URL(input))]; } catch { return [input, null]; }
});
process.stdout.write("[\n" + rows.map((r) => "  " + JSON.stringify(r)).join(",\n") + "\n]\n");
