//! Read each config file and list its servers: transport, wrapped or not, and why an entry is
//! skipped. Read-only; `status` prints this, `install`/`uninstall` plan from it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{
    claude_code, codex, env_keys, wrap, zed, ClientId, ConfigFile, Format, HostEnv, Scope, Shape,
};

/// One server entry of one file.
#[derive(Debug, Clone, Serialize)]
pub struct ServerEntry {
    pub client: ClientId,
    pub file: PathBuf,
    pub scope: Scope,
    pub name: String,
    /// JSON pointer of the entry (also used for TOML: `/mcp_servers/NAME`).
    pub pointer: String,
    /// `stdio`, `http`, `sse`, `streamable-http`, `extension`, `unknown`.
    pub transport: String,
    pub wrapped: bool,
    /// Why `install` leaves this entry alone (remote, extension, allowlist…).
    pub skipped: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Keys of the entry's own `env` (and Codex `env_vars`): passed with `--env-keep`.
    pub env_keep: Vec<String>,
    /// The entry's own `env` values (string values only), as the client sets them: used to
    /// launch the entry for a start check. Never serialized (values may be secrets).
    #[serde(skip)]
    pub env: Vec<(String, String)>,
    /// The entry's `cwd`, when it names one.
    #[serde(skip)]
    pub cwd: Option<String>,
    /// Non-fatal remarks (e.g. VS Code `envFile`).
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub(crate) keys: Vec<String>,
    #[serde(skip)]
    pub(crate) shape: Shape,
}

impl ServerEntry {
    /// The keys from the document root to the object holding `command`/`args`.
    pub(crate) fn holder_path(&self) -> (Vec<String>, &'static str) {
        match &self.shape {
            Shape::Stdio {
                holder,
                command_key,
            } => {
                let mut p = self.keys.clone();
                p.extend(holder.iter().cloned());
                (p, command_key)
            }
            _ => (self.keys.clone(), "command"),
        }
    }

    /// True when `install` would wrap this entry.
    pub fn wrappable(&self) -> bool {
        self.skipped.is_none() && !self.wrapped && matches!(self.shape, Shape::Stdio { .. })
    }
}

/// The outcome of reading one file.
#[derive(Debug, Clone)]
pub struct FileScan {
    pub file: ConfigFile,
    /// The text, when the file exists and is UTF-8.
    pub text: Option<String>,
    /// Why the file could not be read or parsed (it is then left untouched).
    pub error: Option<String>,
    pub entries: Vec<ServerEntry>,
}

/// RFC 6901 escaping of one pointer segment.
pub fn pointer_segment(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

pub fn pointer(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("/{}", pointer_segment(k)))
        .collect()
}

pub fn parse(format: Format, text: &str) -> Result<serde_json::Value, String> {
    match format {
        Format::Jsonc => super::jsonc::parse_value(text),
        Format::Toml => super::tomlfmt::parse_value(text),
    }
}

/// List the entries of already-read text (used again after an edit to verify it).
pub fn entries_of(file: &ConfigFile, text: &str) -> Result<Vec<ServerEntry>, String> {
    let doc = parse(file.format, text)?;
    let spec = file.client.spec();
    let mut out = Vec::new();
    for section in (spec.sections)(&doc, file) {
        let mut map = Some(&doc);
        for key in &section.path {
            map = map.and_then(|m| m.get(key));
        }
        let Some(map) = map.and_then(|m| m.as_object()) else {
            continue;
        };
        for (name, entry) in map {
            let mut keys = section.path.clone();
            keys.push(name.clone());
            out.push(entry_of(file, section.scope, keys, name, entry));
        }
    }
    Ok(out)
}

fn string_args(v: Option<&serde_json::Value>) -> Option<Vec<String>> {
    match v {
        None => Some(vec![]),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect(),
        Some(_) => None,
    }
}

fn entry_of(
    file: &ConfigFile,
    scope: Scope,
    keys: Vec<String>,
    name: &str,
    entry: &serde_json::Value,
) -> ServerEntry {
    let shape = (file.client.spec().classify)(entry);
    let mut e = ServerEntry {
        client: file.client,
        file: file.path.clone(),
        scope,
        name: name.to_string(),
        pointer: pointer(&keys),
        transport: String::new(),
        wrapped: false,
        skipped: None,
        command: None,
        args: vec![],
        env_keep: vec![],
        env: vec![],
        cwd: None,
        warnings: vec![],
        keys,
        shape: shape.clone(),
    };
    match shape {
        Shape::Remote(t) => {
            e.transport = t;
            e.skipped = Some("remote server (nothing local to confine)".into());
        }
        Shape::Extension => {
            e.transport = "extension".into();
            e.skipped = Some("Zed extension server (its command is not in the file)".into());
        }
        Shape::Unknown(why) => {
            e.transport = "unknown".into();
            e.skipped = Some(why);
        }
        Shape::Stdio {
            holder,
            command_key,
        } => {
            e.transport = "stdio".into();
            let mut h = Some(entry);
            for k in &holder {
                h = h.and_then(|x| x.get(k));
            }
            let h = h.unwrap_or(entry);
            e.command = h
                .get(command_key)
                .and_then(|c| c.as_str())
                .map(str::to_string);
            match string_args(h.get("args")) {
                Some(args) => e.args = args,
                None => e.skipped = Some("`args` is not an array of strings".into()),
            }
            let env = if file.client == ClientId::Zed {
                zed::env_of(entry)
            } else {
                entry.get("env")
            };
            e.env_keep = env_keys(env);
            e.env = env
                .and_then(|v| v.as_object())
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            e.cwd = h.get("cwd").and_then(|c| c.as_str()).map(str::to_string);
            if file.client == ClientId::Codex {
                for k in codex::env_vars(entry) {
                    if !e.env_keep.contains(&k) {
                        e.env_keep.push(k);
                    }
                }
            }
            if entry.get("envFile").is_some() {
                e.warnings.push(
                    "`envFile` variables are not passed through the proxy's environment scrub; \
                     add their names to `env` or edit `--env-keep` by hand"
                        .into(),
                );
            }
            if let Some(cmd) = &e.command {
                e.wrapped = wrap::is_wrapped(cmd, &e.args);
                let mut argv = vec![cmd.clone()];
                argv.extend(e.args.iter().cloned());
                if let Some(w) = launcher_warning(&argv) {
                    e.warnings.push(w);
                }
            }
        }
    }
    e
}

/// Read one file. A missing file is `text: None` without an error.
pub fn scan_file(file: &ConfigFile) -> FileScan {
    let mut out = FileScan {
        file: file.clone(),
        text: None,
        error: None,
        entries: vec![],
    };
    let bytes = match std::fs::read(&file.path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.error = Some(format!("cannot read: {e}"));
            return out;
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => {
            out.error = Some("not UTF-8 text".into());
            return out;
        }
    };
    match entries_of(file, &text) {
        Ok(entries) => out.entries = entries,
        Err(e) => out.error = Some(format!("does not parse: {e}")),
    }
    out.text = Some(text);
    out
}

/// Scan every config file of the selected clients, applying machine-wide skips (Claude Code's
/// command allowlist).
pub fn scan_all(host: &HostEnv, project: &Path, clients: &[ClientId]) -> Vec<FileScan> {
    let allowlist = claude_code::command_allowlist(host, project);
    super::config_files(host, project, clients)
        .iter()
        .map(scan_file)
        .map(|mut scan| {
            if let (ClientId::ClaudeCode, Some(list)) = (scan.file.client, &allowlist) {
                for e in &mut scan.entries {
                    if e.skipped.is_none() && !e.wrapped {
                        e.skipped = Some(format!(
                            "Claude Code's allowedMcpServers in {} matches servers by \
                             serverCommand, so a wrapped command would be refused",
                            list.display()
                        ));
                    }
                }
            }
            scan
        })
        .collect()
}

/// A launcher the jail cannot resolve yet (the start check would fail): say so at install.
fn launcher_warning(argv: &[String]) -> Option<String> {
    use crate::policy::{Runner, ServerCommand};
    let runner = ServerCommand::parse(argv).runner()?;
    match runner {
        Runner::PipxRun | Runner::PnpmDlx | Runner::Bunx | Runner::YarnDlx => Some(format!(
            "`{}` is not resolved under the jail yet, so this server will not start wrapped; \
             use `npx -y PKG` / `uvx PKG` for the same package, or the installed program's path",
            runner.label()
        )),
        _ => None,
    }
}
