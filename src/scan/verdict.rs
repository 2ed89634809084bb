//! Classification of traced accesses and the verdicts, per tool and per server.
//!
//! An access is *out of scope* when its resolved path lies in one of the scan sandbox's canary
//! places (the fake HOME, the file next to the scope, `<scope>-evil`, the outside git repository
//! and SQLite directory) or in the real HOME; the server's install tree, interpreter, system
//! libraries, `/proc` and devices are its runtime and are not judged. An out-of-scope access
//! counts when it succeeded, when the safety jail refused it (`EACCES`/`EPERM`: the attempt is
//! the evidence), or when it named something that exists; an `ENOENT` probe for a file that
//! is not there (a server looking for its optional config) does not.
//!
//! Verdicts, per tool: `launders` (a hostile argument led to an out-of-scope access),
//! `undeclared` (an out-of-scope access during its benign control call), `broken` (the control
//! call failed), else `confined`. Per server: `launders` if any tool launders, else
//! `undeclared` if any tool does or the server reached out of scope at start-up, else `broken`
//! if no control call succeeded, else `confined`. `exfiltrated` is a separate flag: a canary's
//! token came back in a result.

use std::path::{Path, PathBuf};

use super::client::CallOutcome;
use super::sandbox::ScanSandbox;
use super::tracer::{Access, AccessKind, PHASE_STARTUP};

/// The JSON report's schema identifier; bump on incompatible changes.
pub const SCHEMA: &str = "mcpjail.scan/v1";

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Confined,
    Broken,
    Undeclared,
    Launders,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Confined => "confined",
            Verdict::Broken => "broken",
            Verdict::Undeclared => "undeclared",
            Verdict::Launders => "launders",
        }
    }
}

/// One out-of-scope access and what led to it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Evidence {
    /// `launders` (hostile input) or `undeclared` (no hostile input).
    pub kind: Verdict,
    /// `None` for start-up.
    pub tool: Option<String>,
    pub argument: Option<String>,
    /// Probe id (`control` for the benign call).
    pub probe: Option<String>,
    pub value: Option<String>,
    pub syscall: String,
    pub access: AccessKind,
    pub path: String,
    pub resolved: PathBuf,
    pub result: String,
}

/// One call the scan made, with what it touched outside the runtime.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeRecord {
    pub phase: u32,
    pub tool: String,
    /// The path argument (pattern) replaced, `None` for the control call.
    pub argument: Option<String>,
    /// `control` or a corpus probe id.
    pub probe: String,
    pub value: Option<String>,
    pub ok: bool,
    pub timed_out: bool,
    /// The result, cut to 2 KiB.
    pub result: String,
    /// Canary names whose token came back in the result.
    pub leaked: Vec<String>,
    /// In-scope and out-of-scope accesses of this call (runtime accesses left out).
    pub accesses: Vec<ClassifiedAccess>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ClassifiedAccess {
    #[serde(flatten)]
    pub access: Access,
    pub in_scope: bool,
    pub violation: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ToolVerdict {
    pub tool: String,
    pub verdict: Verdict,
    pub path_arguments: Vec<String>,
    pub probes: usize,
    pub control_ok: bool,
    pub exfiltrated: bool,
    pub evidence: Vec<Evidence>,
}

/// Where accesses count as out of scope.
pub struct Classifier<'a> {
    pub sandbox: &'a ScanSandbox,
    /// The real HOME (when it does not contain the sandbox).
    pub real_home: Option<PathBuf>,
    /// What the safety jail grants the server's runtime (interpreter, install tree): never
    /// out of scope, even inside the real HOME (`~/.pyenv`, `~/.npm/_npx`).
    pub runtime: Vec<PathBuf>,
    /// Directories the runtime itself opens by name but whose contents are not granted: the
    /// server script's own directory (Python lists `sys.path[0]`, Node reads its
    /// `package.json` lookups). Opening exactly one of these is runtime, not the server
    /// reaching out; anything inside them is still judged.
    pub runtime_dirs: Vec<PathBuf>,
}

impl Classifier<'_> {
    fn outside(&self, p: &Path) -> bool {
        if self.sandbox.is_in_scope(p) || self.runtime_dirs.iter().any(|d| d == p) {
            return false;
        }
        self.sandbox.is_outside(p)
            || self.real_home.as_deref().is_some_and(|h| {
                p.starts_with(h)
                    && !self.sandbox.root.starts_with(h)
                    && !self.runtime.iter().any(|r| p.starts_with(r))
            })
    }

    pub fn is_violation(&self, a: &Access) -> bool {
        if a.kind == AccessKind::Network {
            // With the network off the jail refuses sockets; a UNIX socket path outside the
            // scope is judged like a file.
            if !a.path.starts_with("unix:/") {
                return false;
            }
        }
        if !self.outside(&a.resolved) {
            return false;
        }
        match a.result {
            Some(r) if r >= 0 => true,
            Some(r) => {
                let e = (-r) as i32;
                e == libc::EACCES || e == libc::EPERM || a.resolved.exists()
            }
            None => true,
        }
    }

    pub fn classify(&self, accesses: &[Access]) -> Vec<ClassifiedAccess> {
        accesses
            .iter()
            .filter_map(|a| {
                let in_scope = self.sandbox.is_in_scope(&a.resolved);
                let violation = self.is_violation(a);
                (in_scope || violation).then(|| ClassifiedAccess {
                    access: a.clone(),
                    in_scope,
                    violation,
                })
            })
            .collect()
    }

    /// Accesses outside any call (start-up, a restart, between calls: no hostile input) that
    /// reached out of scope.
    pub fn startup_evidence(&self, accesses: &[Access]) -> Vec<Evidence> {
        accesses
            .iter()
            .filter(|a| {
                (a.phase == PHASE_STARTUP || a.phase >= u32::MAX - 1) && self.is_violation(a)
            })
            .map(|a| evidence(Verdict::Undeclared, None, a))
            .collect()
    }
}

fn evidence(kind: Verdict, probe: Option<&ProbeRecord>, a: &Access) -> Evidence {
    Evidence {
        kind,
        tool: probe.map(|p| p.tool.clone()),
        argument: probe.and_then(|p| p.argument.clone()),
        probe: probe.map(|p| p.probe.clone()),
        value: probe.and_then(|p| p.value.clone()),
        syscall: a.syscall.to_string(),
        access: a.kind,
        path: a.path.clone(),
        resolved: a.resolved.clone(),
        result: a.result_text(),
    }
}

/// Build a probe record from a call's outcome and its accesses.
#[allow(clippy::too_many_arguments)]
pub fn record(
    classifier: &Classifier,
    phase: u32,
    tool: &str,
    argument: Option<&str>,
    probe: &str,
    value: Option<&str>,
    outcome: &CallOutcome,
    accesses: &[Access],
) -> ProbeRecord {
    let leaked = classifier
        .sandbox
        .leaked_in(&outcome.text)
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    let mut result = outcome.text.clone();
    if result.len() > 2048 {
        let mut cut = 2048;
        while !result.is_char_boundary(cut) {
            cut -= 1;
        }
        result.truncate(cut);
        result.push('…');
    }
    ProbeRecord {
        phase,
        tool: tool.into(),
        argument: argument.map(str::to_string),
        probe: probe.into(),
        value: value.map(|v| shorten(v, 200)),
        ok: outcome.ok,
        timed_out: outcome.timed_out,
        result,
        leaked,
        accesses: classifier.classify(accesses),
    }
}

/// A value for display: long runs cut, NUL shown as `\0`.
pub fn shorten(v: &str, max: usize) -> String {
    let v = v.replace('\0', "\\0");
    if v.chars().count() <= max {
        return v;
    }
    let head: String = v.chars().take(max).collect();
    format!("{head}…({} chars)", v.chars().count())
}

/// The verdict of each tool, from its probe records (in the order tools were probed).
pub fn tool_verdicts(tools: &[(String, Vec<String>)], probes: &[ProbeRecord]) -> Vec<ToolVerdict> {
    tools
        .iter()
        .map(|(name, path_args)| {
            let mine: Vec<&ProbeRecord> = probes.iter().filter(|p| &p.tool == name).collect();
            let control_ok = mine.iter().any(|p| p.probe == "control" && p.ok);
            let mut evidence_list = Vec::new();
            for p in &mine {
                let kind = if p.probe == "control" {
                    Verdict::Undeclared
                } else {
                    Verdict::Launders
                };
                for a in p.accesses.iter().filter(|a| a.violation) {
                    evidence_list.push(evidence(kind, Some(p), &a.access));
                }
            }
            let verdict = if evidence_list.iter().any(|e| e.kind == Verdict::Launders) {
                Verdict::Launders
            } else if !evidence_list.is_empty() {
                Verdict::Undeclared
            } else if !control_ok {
                Verdict::Broken
            } else {
                Verdict::Confined
            };
            ToolVerdict {
                tool: name.clone(),
                verdict,
                path_arguments: path_args.clone(),
                probes: mine.len(),
                control_ok,
                exfiltrated: mine.iter().any(|p| !p.leaked.is_empty()),
                evidence: evidence_list,
            }
        })
        .collect()
}

/// The server's verdict.
pub fn server_verdict(tools: &[ToolVerdict], startup: &[Evidence]) -> Verdict {
    if tools.iter().any(|t| t.verdict == Verdict::Launders) {
        Verdict::Launders
    } else if !startup.is_empty() || tools.iter().any(|t| t.verdict == Verdict::Undeclared) {
        Verdict::Undeclared
    } else if !tools.iter().any(|t| t.control_ok) {
        Verdict::Broken
    } else {
        Verdict::Confined
    }
}
