//! Rendering a [`ScanReport`]: human text, JSON (the report itself), SARIF 2.1.0, SVG badge.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::verdict::{Evidence, Verdict};
use super::ScanReport;

/// A shields-style flat SVG badge: `mcpjail | <verdict>` (see [`super::badge`]).
pub fn badge_svg(report: &ScanReport) -> String {
    super::badge::svg(report.verdict)
}

fn evidence_line(e: &Evidence) -> String {
    let mut s = String::new();
    if let Some(arg) = &e.argument {
        let _ = write!(s, "{}=", super::corpus::arg_name(arg));
    }
    if let Some(v) = &e.value {
        let _ = write!(s, "{:?} ", super::verdict::shorten(v, 80));
    }
    if let Some(p) = &e.probe {
        let _ = write!(s, "[{p}] ");
    }
    let _ = write!(
        s,
        "-> {}({}) {:?} -> {} ({})",
        e.syscall,
        format!("{:?}", e.access).to_lowercase(),
        e.path,
        e.resolved.display(),
        e.result
    );
    s
}

/// The human report. Most of it quotes the server (its name, tool names, paths it touched):
/// a tool name is shown as a one-line field, and the whole text with terminal controls
/// escaped ([`crate::shown`]), so printing the report cannot act on the user's terminal.
pub fn text(report: &ScanReport) -> String {
    let mut out = String::new();
    let s = &report.server;
    let _ = writeln!(out, "mcpjail scan: {}", s.name);
    let _ = writeln!(out, "  command       {}", s.command.join(" "));
    if !s.remapped.is_empty() {
        let _ = writeln!(out, "  remapped      {}", s.remapped.join(", "));
    }
    if let Some(info) = s.server_info.as_object() {
        let _ = writeln!(
            out,
            "  server        {} {}",
            info.get("name").and_then(Value::as_str).unwrap_or("?"),
            info.get("version").and_then(Value::as_str).unwrap_or("")
        );
    }
    let _ = writeln!(out, "  tools digest  {}", s.tools_digest);
    let _ = writeln!(
        out,
        "  traced        {} accesses ({} at start-up), {} calls, {:.1} s",
        report.traced_accesses,
        report.startup_accesses,
        report.probes.len(),
        report.duration_ms as f64 / 1000.0
    );
    let _ = writeln!(out);
    let width = report
        .tools
        .iter()
        .map(|t| crate::shown::shown(&t.tool).chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "  {:<width$}  {:<10}  {:>6}  {:<7}  {:<11}  path arguments",
        "TOOL", "VERDICT", "CALLS", "CONTROL", "EXFILTRATED"
    );
    for t in &report.tools {
        let _ = writeln!(
            out,
            "  {:<width$}  {:<10}  {:>6}  {:<7}  {:<11}  {}",
            crate::shown::shown(&t.tool),
            t.verdict.as_str(),
            t.probes,
            if t.control_ok { "ok" } else { "FAILED" },
            if t.exfiltrated { "YES" } else { "no" },
            t.path_arguments
                .iter()
                .map(|p| super::corpus::arg_name(p))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let evidence: Vec<(&str, &Evidence)> = report
        .startup
        .iter()
        .map(|e| ("start-up", e))
        .chain(
            report
                .tools
                .iter()
                .flat_map(|t| t.evidence.iter().map(move |e| (t.tool.as_str(), e))),
        )
        .collect();
    if !evidence.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  Evidence ({}):", evidence.len());
        for (where_, e) in evidence.iter().take(40) {
            let _ = writeln!(
                out,
                "    {} {where_}: {}",
                e.kind.as_str(),
                evidence_line(e)
            );
        }
        if evidence.len() > 40 {
            let _ = writeln!(out, "    … {} more in --format json", evidence.len() - 40);
        }
    }
    let leaks: Vec<String> = report
        .probes
        .iter()
        .filter(|p| !p.leaked.is_empty())
        .map(|p| format!("{} [{}]: {}", p.tool, p.probe, p.leaked.join(", ")))
        .collect();
    if !leaks.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  Exfiltrated canaries ({}):", leaks.len());
        for l in leaks.iter().take(20) {
            let _ = writeln!(out, "    {l}");
        }
    }
    if let Some(j) = &report.jail_pass {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "  Jail pass (mcpjail proxy): {} — {} calls, {} hostile calls refused, {} out-of-scope \
             attempts blocked by the kernel, {} escaped, {} leaked; control calls ok {}/{}",
            if j.holds { "HOLDS" } else { "FAILS" },
            j.calls,
            j.refused_calls,
            j.blocked_attempts,
            j.escaped.len(),
            j.leaked.len(),
            j.controls_ok_jailed,
            j.controls_ok_traced
        );
        for e in j.escaped.iter().take(10) {
            let _ = writeln!(out, "    escaped: {}", evidence_line(e));
        }
        if !j.controls_broken_by_jail.is_empty() {
            let _ = writeln!(
                out,
                "    control calls that fail only in the jail: {}",
                j.controls_broken_by_jail.join(", ")
            );
        }
        if let Some(err) = &j.error {
            let _ = writeln!(out, "    error: {err}");
        }
    }
    for n in &report.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    let stderr_lines = report.stderr.lines().count();
    if stderr_lines > 0 {
        let _ = writeln!(
            out,
            "  server stderr: {stderr_lines} line(s), kept in --format json (\"stderr\")"
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "VERDICT: {}{}",
        report.verdict.as_str(),
        if report.exfiltrated {
            " (exfiltrated: a canary token came back in a result)"
        } else {
            ""
        }
    );
    crate::shown::shown_text(&out).into_owned()
}

const RULES: &[(&str, &str, &str, &str)] = &[
    (
        "MCPJAIL-LAUNDERS",
        "launders",
        "A hostile path argument led to an access outside the declared scope",
        "error",
    ),
    (
        "MCPJAIL-UNDECLARED",
        "undeclared",
        "The server accessed a path outside its declared scope without hostile input",
        "warning",
    ),
    (
        "MCPJAIL-EXFILTRATED",
        "exfiltrated",
        "A canary file's content came back in a tool result",
        "error",
    ),
    (
        "MCPJAIL-BROKEN",
        "broken",
        "The tool's benign in-scope control call failed",
        "note",
    ),
];

/// SARIF 2.1.0: one result per violation, one rule per kind, the tool as the (logical)
/// location.
pub fn sarif(report: &ScanReport) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, name, desc, level)| {
            json!({
                "id": id,
                "name": name,
                "shortDescription": {"text": desc},
                "fullDescription": {"text": desc},
                "defaultConfiguration": {"level": level},
                "helpUri": "https://github.com/mcpjail/mcpjail#the-laundering-scan",
            })
        })
        .collect();
    let rule_index = |id: &str| RULES.iter().position(|r| r.0 == id).unwrap_or(0);
    let location = |tool: &str| {
        json!([{
            "logicalLocations": [{"name": tool, "kind": "function",
                                  "fullyQualifiedName": format!("{}/{}", report.server.name, tool)}],
            "physicalLocation": {"artifactLocation": {"uri": "mcp-server", "uriBaseId": "SERVER"}},
        }])
    };
    let mut results = Vec::new();
    let all_evidence = report.startup.iter().map(|e| ("(start-up)", e)).chain(
        report
            .tools
            .iter()
            .flat_map(|t| t.evidence.iter().map(move |e| (t.tool.as_str(), e))),
    );
    for (tool, e) in all_evidence {
        let id = if e.kind == Verdict::Launders {
            "MCPJAIL-LAUNDERS"
        } else {
            "MCPJAIL-UNDECLARED"
        };
        results.push(json!({
            "ruleId": id,
            "ruleIndex": rule_index(id),
            "level": RULES[rule_index(id)].3,
            "message": {"text": format!("{tool}: {}", evidence_line(e))},
            "locations": location(tool),
            "properties": {
                "tool": tool, "argument": e.argument, "probe": e.probe, "value": e.value,
                "syscall": e.syscall, "path": e.path, "resolved": e.resolved, "result": e.result,
            },
        }));
    }
    for p in report.probes.iter().filter(|p| !p.leaked.is_empty()) {
        let id = "MCPJAIL-EXFILTRATED";
        results.push(json!({
            "ruleId": id,
            "ruleIndex": rule_index(id),
            "level": "error",
            "message": {"text": format!("{} [{}] returned the content of canary {}",
                                        p.tool, p.probe, p.leaked.join(", "))},
            "locations": location(&p.tool),
            "properties": {"tool": p.tool, "probe": p.probe, "value": p.value, "canaries": p.leaked},
        }));
    }
    for t in report.tools.iter().filter(|t| t.verdict == Verdict::Broken) {
        let id = "MCPJAIL-BROKEN";
        results.push(json!({
            "ruleId": id,
            "ruleIndex": rule_index(id),
            "level": "note",
            "message": {"text": format!("{}: the in-scope control call failed", t.tool)},
            "locations": location(&t.tool),
        }));
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mcpjail-scan",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/mcpjail/mcpjail",
                "rules": rules,
            }},
            "originalUriBaseIds": {"SERVER": {"description": {"text": report.server.command.join(" ")}}},
            "results": results,
            "properties": {
                "verdict": report.verdict,
                "exfiltrated": report.exfiltrated,
                "toolsDigest": report.server.tools_digest,
            },
        }],
    })
}
