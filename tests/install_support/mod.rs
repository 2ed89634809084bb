//! Shared helpers for the `install_*` tests: a temp HOME and project, the fixture table, the
//! `mcpjail` binary run with an environment derived only from that HOME, and an independent
//! check that an edit touched nothing but `command`/`args` values.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

pub const MCPJAIL: &str = env!("CARGO_BIN_EXE_mcpjail");
pub const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One fixture config and where its client reads it (Linux layout).
#[derive(Debug, Clone, Copy)]
pub struct Fixture {
    pub client: &'static str,
    /// Under `fixtures/configs/`.
    pub source: &'static str,
    /// Relative to HOME (`~/…`) or the project (`@/…`).
    pub dest: &'static str,
    pub toml: bool,
}

pub const FIXTURES: &[Fixture] = &[
    Fixture {
        client: "claude-desktop",
        source: "claude-desktop/claude_desktop_config.json",
        dest: "~/.config/Claude/claude_desktop_config.json",
        toml: false,
    },
    Fixture {
        client: "claude-code",
        source: "claude-code/claude.json",
        dest: "~/.claude.json",
        toml: false,
    },
    Fixture {
        client: "claude-code",
        source: "claude-code/mcp.json",
        dest: "@/.mcp.json",
        toml: false,
    },
    Fixture {
        client: "cursor",
        source: "cursor/mcp.json",
        dest: "~/.cursor/mcp.json",
        toml: false,
    },
    Fixture {
        client: "vscode",
        source: "vscode/mcp.user.json",
        dest: "~/.config/Code/User/mcp.json",
        toml: false,
    },
    Fixture {
        client: "vscode",
        source: "vscode/mcp.workspace.json",
        dest: "@/.vscode/mcp.json",
        toml: false,
    },
    Fixture {
        client: "windsurf",
        source: "windsurf/mcp_config.json",
        dest: "~/.codeium/windsurf/mcp_config.json",
        toml: false,
    },
    Fixture {
        client: "gemini",
        source: "gemini/settings.json",
        dest: "~/.gemini/settings.json",
        toml: false,
    },
    Fixture {
        client: "cline",
        source: "cline/cline_mcp_settings.json",
        dest: "~/.cline/data/settings/cline_mcp_settings.json",
        toml: false,
    },
    Fixture {
        client: "zed",
        source: "zed/settings.json",
        dest: "~/.config/zed/settings.json",
        toml: false,
    },
    Fixture {
        client: "codex",
        source: "codex/config.toml",
        dest: "~/.codex/config.toml",
        toml: true,
    },
];

pub struct Sandbox {
    pub _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        // Canonical paths, as mcpjail stores them (/tmp may be a symlink elsewhere).
        let home = std::fs::canonicalize(home).unwrap();
        let project = std::fs::canonicalize(project).unwrap();
        Sandbox {
            _dir: dir,
            home,
            project,
        }
    }

    pub fn path(&self, dest: &str) -> PathBuf {
        if let Some(rest) = dest.strip_prefix("~/") {
            self.home.join(rest)
        } else if let Some(rest) = dest.strip_prefix("@/") {
            self.project.join(rest)
        } else {
            panic!("bad dest {dest}")
        }
    }

    pub fn write(&self, dest: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(dest);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Copy a fixture into place; returns its bytes.
    pub fn place(&self, f: &Fixture) -> Vec<u8> {
        let bytes = std::fs::read(repo().join("fixtures/configs").join(f.source)).unwrap();
        self.write(f.dest, &bytes);
        bytes
    }

    pub fn read(&self, dest: &str) -> Vec<u8> {
        std::fs::read(self.path(dest)).unwrap()
    }

    pub fn state_dir(&self) -> PathBuf {
        self.home.join(".local/state/mcpjail/installs")
    }

    /// `mcpjail ARGS…` with an environment made only from this sandbox (no inherited HOME,
    /// XDG_*, CLAUDE_CONFIG_DIR, CODEX_HOME, APPDATA) and cwd = the project.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(MCPJAIL);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("NO_COLOR", "1")
            .current_dir(&self.project)
            .args(args)
            .stdin(std::process::Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// `install --yes --proxy <real proxy> --no-check` (the fixture configs name servers that
    /// are not installed here; tests of the start check run it themselves).
    pub fn install(&self, extra: &[&str]) -> Output {
        let mut args = vec!["install", "--yes", "--no-check", "--proxy", PROXY];
        args.extend_from_slice(extra);
        self.run(&args)
    }
}

pub fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

pub fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// Parse a config the way the test sees it (jsonc-parser for JSON/JSONC, the `toml` crate).
pub fn parse(toml: bool, text: &str) -> serde_json::Value {
    if toml {
        toml::from_str(text).unwrap()
    } else {
        let body = text.trim_start_matches('\u{feff}');
        jsonc_parser::parse_to_serde_value::<serde_json::Value>(body, &Default::default()).unwrap()
    }
}

/// Walk `orig` and `new` together: they must be equal except that objects whose `command`
/// (or Zed's nested `path`) is `proxy` in `new` hold the wrapped form of the original command
/// line. Returns how many entries were wrapped.
pub fn same_except_wrapping(
    orig: &serde_json::Value,
    new: &serde_json::Value,
    proxy: &str,
) -> Result<usize, String> {
    use serde_json::Value;
    match (orig, new) {
        (Value::Object(a), Value::Object(b)) => {
            let key = ["command", "path"]
                .into_iter()
                .find(|k| b.get(*k).and_then(|v| v.as_str()) == Some(proxy));
            let mut count = 0;
            if let Some(key) = key {
                let new_args: Vec<&str> = b["args"]
                    .as_array()
                    .ok_or("wrapped entry has no args")?
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                let dd = new_args.iter().position(|a| *a == "--").ok_or("no --")?;
                if new_args[0] != "--name" {
                    return Err(format!(
                        "wrapped args do not start with --name: {new_args:?}"
                    ));
                }
                let orig_cmd = a
                    .get(key)
                    .and_then(|v| v.as_str())
                    .ok_or("original has no command")?;
                let orig_args: Vec<&str> = a
                    .get("args")
                    .map(|v| {
                        v.as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_str().unwrap())
                            .collect()
                    })
                    .unwrap_or_default();
                if new_args[dd + 1] != orig_cmd || new_args[dd + 2..] != orig_args[..] {
                    return Err(format!(
                        "wrapped {new_args:?} does not run {orig_cmd} {orig_args:?}"
                    ));
                }
                count += 1;
            }
            let skip = |k: &str| key.is_some() && (k == "args" || Some(k) == key);
            let ka: Vec<&String> = a.keys().filter(|k| !skip(k)).collect();
            let kb: Vec<&String> = b.keys().filter(|k| !skip(k)).collect();
            if ka != kb {
                return Err(format!("keys differ: {ka:?} vs {kb:?}"));
            }
            for k in ka {
                count += same_except_wrapping(&a[k], &b[k], proxy)?;
            }
            Ok(count)
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            let mut count = 0;
            for (x, y) in a.iter().zip(b) {
                count += same_except_wrapping(x, y, proxy)?;
            }
            Ok(count)
        }
        _ if orig == new => Ok(0),
        _ => Err(format!("values differ: {orig} vs {new}")),
    }
}

/// Byte ranges of the original text where an install may change bytes: every `command`/`path`
/// string value, every `args` array, and — for an object with a command but no `args` — the
/// rest of the command's line (where a new `args` goes). Found with the parsers directly,
/// independently of mcpjail's own locator.
pub fn editable_ranges(toml: bool, text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    // The end of `pos`'s line plus the next line's indentation: a diff may align an inserted
    // "newline + indent + args" anywhere in that stretch.
    let line_end = |pos: usize| {
        let eol = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let rest = &text[eol..];
        eol + (rest.len() - rest.trim_start().len()).saturating_sub(1)
    };
    if toml {
        fn walk(
            t: &dyn toml_edit::TableLike,
            out: &mut Vec<std::ops::Range<usize>>,
            line_end: &dyn Fn(usize) -> usize,
        ) {
            let cmd = t
                .get("command")
                .and_then(|i| i.as_value())
                .and_then(|v| v.span());
            if let Some(c) = &cmd {
                out.push(c.clone());
                match t
                    .get("args")
                    .and_then(|i| i.as_value())
                    .and_then(|v| v.span())
                {
                    Some(a) => out.push(a),
                    None => out.push(c.end..line_end(c.end) + 1),
                }
            }
            for (_, item) in t.iter() {
                if let Some(sub) = item.as_table_like() {
                    walk(sub, out, line_end);
                }
            }
        }
        let doc = toml_edit::Document::parse(text).unwrap();
        walk(doc.as_table(), &mut out, &line_end);
    } else {
        use jsonc_parser::ast::{Object, Value};
        use jsonc_parser::common::Ranged;
        fn walk(
            o: &Object,
            out: &mut Vec<std::ops::Range<usize>>,
            line_end: &dyn Fn(usize) -> usize,
        ) {
            let cmd = o.properties.iter().find(|p| {
                matches!(p.name.as_str(), "command" | "path") && p.value.as_string_lit().is_some()
            });
            if let Some(c) = cmd {
                let r = c.value.range();
                out.push(r.start..r.end);
                match o.properties.iter().find(|p| p.name.as_str() == "args") {
                    Some(a) => out.push(a.value.range().start..a.value.range().end),
                    None => out.push(r.end..line_end(r.end) + 1),
                }
            }
            for p in &o.properties {
                if let Value::Object(sub) = &p.value {
                    walk(sub, out, line_end);
                }
            }
        }
        let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
        let ast =
            jsonc_parser::parse_to_ast(&text[bom..], &Default::default(), &Default::default())
                .unwrap();
        if let Some(Value::Object(o)) = ast.value {
            walk(&o, &mut out, &line_end);
        }
        for r in &mut out {
            *r = r.start + bom..r.end + bom;
        }
    }
    out
}

/// A char diff may align the old command string with its copy inside the new `args` (it moved
/// there), reporting the separator between `command` and `args` as changed. Merge a command
/// range with an `args` range when only `, "args":` / `args =` and whitespace separate them.
fn merge_adjacent(
    text: &str,
    mut ranges: Vec<std::ops::Range<usize>>,
) -> Vec<std::ops::Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for r in ranges {
        if let Some(last) = out.last_mut() {
            let gap = text.get(last.end..r.start).unwrap_or("x");
            let stripped: String = gap.chars().filter(|c| !c.is_whitespace()).collect();
            if r.start >= last.end && matches!(stripped.as_str(), ",\"args\":" | "args=" | "," | "")
            {
                last.end = last.end.max(r.end);
                continue;
            }
        }
        out.push(r);
    }
    out
}

/// Every byte the edit removed and every insertion point lies in an editable range of `orig`.
/// Returns the number of changed regions.
pub fn assert_only_values_changed(toml: bool, orig: &str, new: &str) -> usize {
    let ranges = merge_adjacent(orig, editable_ranges(toml, orig));
    // Lines first (fast on megabyte files), then characters inside each changed block.
    let old_lines: Vec<&str> = orig.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let line_diff = similar::TextDiff::configure().diff_slices(&old_lines, &new_lines);
    let line_start =
        |lines: &[&str], upto: usize| -> usize { lines[..upto].iter().map(|l| l.len()).sum() };
    let mut changed = 0;
    for op in line_diff.ops() {
        let (tag, old_r, new_r) = op.as_tag_tuple();
        if tag == similar::DiffTag::Equal {
            continue;
        }
        let base = line_start(&old_lines, old_r.start);
        let old_block: String = old_lines[old_r.clone()].concat();
        let new_block: String = new_lines[new_r.clone()].concat();
        let diff = similar::TextDiff::configure()
            .algorithm(similar::Algorithm::Myers)
            .diff_chars(old_block.as_str(), new_block.as_str());
        // Char indices of the block diff -> byte offsets of `orig`.
        let byte_of: Vec<usize> = old_block
            .char_indices()
            .map(|(i, _)| base + i)
            .chain([base + old_block.len()])
            .collect();
        for op in diff.ops() {
            let (tag, old_range, _) = op.as_tag_tuple();
            if tag == similar::DiffTag::Equal {
                continue;
            }
            changed += 1;
            let start = byte_of[old_range.start];
            let end = byte_of[old_range.end];
            let inside = ranges.iter().any(|r| {
                if start == end {
                    r.start <= start && start <= r.end
                } else {
                    r.start <= start && end <= r.end
                }
            });
            assert!(
                inside,
                "bytes {start}..{end} changed outside every command/args value: {:?}",
                &orig[start.saturating_sub(20)..(end + 20).min(orig.len())]
            );
        }
    }
    changed
}
