//! `registry build`: a static site from a registry's verified records.
//!
//! ```text
//! SITE/index.html                 search box and sortable table of every record
//! SITE/servers/<server>--<version>.html   one page per record, with its evidence
//! SITE/badges/<server>.svg        the badge of the server's newest record
//! SITE/endpoints/<server>.json    shields.io endpoint JSON for the same
//! SITE/index.json                 the records, for machines
//! SITE/style.css, SITE/table.js   shared by the pages (no CDN, no build step)
//! ```
//!
//! Everything a record holds came from a scanned server (tool names, argument values, paths),
//! so it is treated as hostile: every string is HTML-escaped, and the script reads data from
//! text content and `data-` attributes, never through `innerHTML`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::record::Record;
use super::store::slug;
use crate::scan::badge;

const STYLE: &str = include_str!("site/style.css");
const SCRIPT: &str = include_str!("site/table.js");

pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn page(title: &str, prefix: &str, body: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{prefix}style.css">
</head>
<body>
{body}
</body>
</html>
"#,
        title = html_escape(title),
    )
}

fn record_page_name(record: &Record) -> String {
    format!(
        "{}--{}.html",
        slug(&record.server.name),
        slug(record.server.version_label())
    )
}

fn index_html(records: &[Record]) -> String {
    let mut rows = String::new();
    for r in records {
        let verdict = r.verdict.as_str();
        rows.push_str(&format!(
            r#"<tr>
<td data-key="{name}"><a href="servers/{page}">{name}</a></td>
<td data-key="{version}">{version}</td>
<td data-key="{verdict}"><img src="badges/{badge}.svg" alt="mcpjail: {label}" height="20"> <span class="verdict verdict-{verdict}">{verdict}</span>{exfil}</td>
<td data-key="{date}"><time datetime="{date}">{date}</time></td>
<td data-key="{signer}"><code>{signer}</code></td>
</tr>
"#,
            name = html_escape(&r.server.name),
            page = html_escape(&record_page_name(r)),
            version = html_escape(r.server.version_label()),
            badge = html_escape(&slug(&r.server.name)),
            label = badge::message_and_color(r.verdict).0,
            date = html_escape(&r.date),
            signer = html_escape(&r.signer.key_id),
            exfil = if r.exfiltrated { " <strong>exfiltrated</strong>" } else { "" },
        ));
    }
    let body = format!(
        r#"<header><h1>mcpjail registry</h1>
<p>Signed results of the Laundering Scan: each MCP server was run, called with hostile path arguments, and its real file accesses traced. Check any record yourself with <code>mcpjail registry verify</code>.</p></header>
<main>
<label for="search">Search servers</label>
<input id="search" type="search" placeholder="name, version or verdict" autocomplete="off">
<p id="count" aria-live="polite">{n} records</p>
<table id="records">
<caption>Scan records ({n})</caption>
<thead><tr>
<th scope="col" aria-sort="none"><button type="button" data-col="0">Server</button></th>
<th scope="col" aria-sort="none"><button type="button" data-col="1">Version</button></th>
<th scope="col" aria-sort="none"><button type="button" data-col="2">Verdict</button></th>
<th scope="col" aria-sort="none"><button type="button" data-col="3">Date</button></th>
<th scope="col" aria-sort="none"><button type="button" data-col="4">Signer</button></th>
</tr></thead>
<tbody>
{rows}</tbody>
</table>
</main>
<script src="table.js"></script>"#,
        n = records.len(),
    );
    page("mcpjail registry", "", &body)
}

fn opt(text: &Option<String>) -> String {
    text.as_deref()
        .map(html_escape)
        .unwrap_or_else(|| "—".into())
}

fn record_html(r: &Record) -> String {
    let mut tools = String::new();
    for t in &r.tools {
        tools.push_str(&format!(
            "<tr><td><code>{}</code></td><td><span class=\"verdict verdict-{v}\">{v}</span></td></tr>\n",
            html_escape(&t.name),
            v = t.verdict.as_str()
        ));
    }
    let mut evidence = String::new();
    for e in &r.evidence {
        evidence.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>\n",
            html_escape(&e.kind),
            opt(&e.tool),
            opt(&e.argument),
            opt(&e.value),
            opt(&e.syscall),
            opt(&e.path),
            opt(&e.result),
        ));
    }
    let evidence = if evidence.is_empty() {
        "<p>No out-of-scope access was observed.</p>".to_string()
    } else {
        format!(
            r#"<table><caption>Evidence</caption>
<thead><tr><th scope="col">Kind</th><th scope="col">Tool</th><th scope="col">Argument</th><th scope="col">Value</th><th scope="col">Syscall</th><th scope="col">Path</th><th scope="col">Result</th></tr></thead>
<tbody>
{evidence}</tbody></table>"#
        )
    };
    let command: Vec<String> = r.server.command.iter().map(|a| html_escape(a)).collect();
    let body = format!(
        r#"<header><p><a href="../index.html">← all records</a></p>
<h1>{name} <small>{version}</small></h1>
<p><img src="../badges/{badge}.svg" alt="mcpjail: {label}" height="20"> {exfil}</p></header>
<main>
<dl>
<dt>Ecosystem</dt><dd>{ecosystem}</dd>
<dt>Command</dt><dd><code>{command}</code></dd>
<dt>Entry file SHA-256</dt><dd><code>{entry}</code></dd>
<dt>Tools digest</dt><dd><code>{digest}</code> ({count} tools)</dd>
<dt>Scanned</dt><dd><time datetime="{date}">{date}</time> by {scanner} {scanner_version} on {kernel}</dd>
<dt>Signed by</dt><dd><code>{signer}</code></dd>
</dl>
<table><caption>Tools</caption>
<thead><tr><th scope="col">Tool</th><th scope="col">Verdict</th></tr></thead>
<tbody>
{tools}</tbody></table>
{evidence}
</main>"#,
        name = html_escape(&r.server.name),
        version = html_escape(r.server.version_label()),
        badge = html_escape(&slug(&r.server.name)),
        label = badge::message_and_color(r.verdict).0,
        exfil = if r.exfiltrated {
            "<strong>A canary token came back in a tool result (exfiltrated).</strong>"
        } else {
            ""
        },
        ecosystem = html_escape(&r.server.ecosystem),
        command = command.join(" "),
        entry = opt(&r.server.entry_sha256),
        digest = html_escape(&r.tools_digest),
        count = r.tool_count,
        date = html_escape(&r.date),
        scanner = html_escape(&r.scanner.name),
        scanner_version = html_escape(&r.scanner.version),
        kernel = html_escape(&r.kernel),
        signer = html_escape(&r.signer.key_id),
    );
    page(
        &format!("{} — mcpjail registry", r.server.name),
        "../",
        &body,
    )
}

fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, bytes)
}

/// Write the site for `records` (already verified) into `out`. Returns the files written.
pub fn build(records: &[Record], out: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut records = records.to_vec();
    records.sort_by(|a, b| {
        (a.server.name.as_str(), b.date.as_str()).cmp(&(b.server.name.as_str(), a.date.as_str()))
    });
    let mut written = Vec::new();
    let mut put = |rel: String, bytes: Vec<u8>| -> std::io::Result<()> {
        let path = out.join(rel);
        write(&path, &bytes)?;
        written.push(path);
        Ok(())
    };
    put("style.css".into(), STYLE.as_bytes().to_vec())?;
    put("table.js".into(), SCRIPT.as_bytes().to_vec())?;
    put("index.html".into(), index_html(&records).into_bytes())?;
    // A server's badge is its newest record's (records are sorted newest first per server).
    let mut newest: BTreeMap<&str, &Record> = BTreeMap::new();
    for r in &records {
        put(
            format!("servers/{}", record_page_name(r)),
            record_html(r).into_bytes(),
        )?;
        newest.entry(r.server.name.as_str()).or_insert(r);
    }
    for (name, r) in &newest {
        put(
            format!("badges/{}.svg", slug(name)),
            badge::svg(r.verdict).into_bytes(),
        )?;
        let endpoint = badge::shields_endpoint(r.verdict);
        put(
            format!("endpoints/{}.json", slug(name)),
            format!("{endpoint:#}\n").into_bytes(),
        )?;
    }
    let index = serde_json::json!({
        "schema": "mcpjail.registry-index.v1",
        "records": records.iter().map(|r| serde_json::json!({
            "server": r.server.name,
            "ecosystem": r.server.ecosystem,
            "version": r.server.version,
            "verdict": r.verdict,
            "exfiltrated": r.exfiltrated,
            "tools_digest": r.tools_digest,
            "date": r.date,
            "signer": r.signer.key_id,
            "page": format!("servers/{}", record_page_name(r)),
            "badge": format!("badges/{}.svg", slug(&r.server.name)),
            "record": r,
        })).collect::<Vec<_>>(),
    });
    put("index.json".into(), format!("{index:#}\n").into_bytes())?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::record::tests::sample;
    use crate::registry::record::{Evidence, Verdict};

    #[test]
    fn hostile_strings_from_a_scan_are_escaped_everywhere() {
        let mut r = sample("2026-12-01T00:00:00Z");
        r.verdict = Verdict::Launders;
        r.tools[0].name = "<script>alert(1)</script>".into();
        r.evidence.push(Evidence {
            kind: "launders".into(),
            tool: Some("x\"><img src=x onerror=alert(1)>".into()),
            argument: Some("path".into()),
            value: Some("../../.ssh/id_rsa".into()),
            syscall: Some("openat".into()),
            path: Some("/home/u/.ssh/id_rsa".into()),
            result: Some("ok".into()),
        });
        let tmp = tempfile::tempdir().unwrap();
        build(&[r], tmp.path()).unwrap();
        for entry in std::fs::read_dir(tmp.path().join("servers")).unwrap() {
            let html = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            assert!(!html.contains("<script>alert"), "{html}");
            assert!(!html.contains("<img src=x"), "{html}");
            assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        }
        let badge = std::fs::read_to_string(
            tmp.path()
                .join("badges/modelcontextprotocol__server-filesystem.svg"),
        )
        .unwrap();
        assert!(badge.contains("launders paths"));
    }
}
