//! Which running client would overwrite a config file from its in-memory state.
//!
//! Claude Desktop rewrites `claude_desktop_config.json` and Claude Code rewrites `.claude.json`
//! while they run, so an edit made under them can be silently lost (or worse, half-merged).
//! On Linux we read `/proc/*/comm` and `cmdline`, and `environ` to learn which HOME /
//! `CLAUDE_CONFIG_DIR` / `XDG_CONFIG_HOME` the process uses: a `claude` of another HOME does not
//! rewrite this file. When a process's environment is unreadable we assume it does (fail safe).
//! On macOS `ps` gives command lines but no environment, so any match counts.

use std::path::{Path, PathBuf};

use super::{HostEnv, Os, RewritingClient};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningClient {
    pub pid: u32,
    pub name: String,
}

fn base(s: &str) -> &str {
    s.rsplit(['/', '\\']).next().unwrap_or(s)
}

/// Does this process look like `client`? `comm` is the kernel's 15-byte name.
pub fn matches(client: RewritingClient, comm: &str, argv: &[String]) -> bool {
    let argv0 = argv.first().map(|s| base(s)).unwrap_or("");
    match client {
        RewritingClient::ClaudeCode => {
            comm == "claude"
                || argv0 == "claude"
                || argv.iter().take(3).any(|a| {
                    a.ends_with("@anthropic-ai/claude-code/cli.js")
                        || (base(a) == "claude" && !a.contains("Claude.app"))
                })
        }
        RewritingClient::ClaudeDesktop => {
            comm == "claude-desktop"
                || comm == "Claude"
                || argv0 == "Claude"
                || argv0 == "Claude.exe"
                || argv.iter().take(3).any(|a| {
                    a.contains("Claude.app/Contents/MacOS/Claude") || a.contains("claude-desktop")
                })
        }
    }
}

/// The file `client` rewrites, given that process's environment lookup.
fn file_of(
    client: RewritingClient,
    os: Os,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    let host = HostEnv::from_lookup(os, |k| env(k).map(Into::into)).ok()?;
    Some(match client {
        RewritingClient::ClaudeCode => host.claude_json(),
        RewritingClient::ClaudeDesktop => host
            .app_config_dir()
            .join("Claude")
            .join(super::claude_desktop::FILE_NAME),
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    let ca = std::fs::canonicalize(a).unwrap_or_else(|_| a.to_path_buf());
    let cb = std::fs::canonicalize(b).unwrap_or_else(|_| b.to_path_buf());
    ca == cb
}

/// Running processes of `client` that would rewrite `path`.
pub fn rewriters(client: RewritingClient, path: &Path) -> Vec<RunningClient> {
    platform::processes()
        .into_iter()
        .filter(|p| matches(client, &p.comm, &p.argv))
        .filter(|p| match &p.environ {
            Some(vars) => {
                let lookup = |k: &str| {
                    vars.iter()
                        .find(|(key, _)| key == k)
                        .map(|(_, v)| v.clone())
                };
                file_of(client, Os::current(), &lookup).is_none_or(|f| same_file(&f, path))
            }
            None => true,
        })
        .map(|p| RunningClient {
            pid: p.pid,
            name: if p.comm.is_empty() {
                p.argv.first().cloned().unwrap_or_default()
            } else {
                p.comm.clone()
            },
        })
        .collect()
}

pub(crate) struct Process {
    pub pid: u32,
    pub comm: String,
    pub argv: Vec<String>,
    /// `None` when unreadable (another user's process, or no /proc).
    pub environ: Option<Vec<(String, String)>>,
}

#[cfg(target_os = "linux")]
mod platform {
    use super::Process;

    fn split_nul(bytes: &[u8]) -> Vec<String> {
        bytes
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    }

    pub(crate) fn processes() -> Vec<Process> {
        let me = std::process::id();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return vec![];
        };
        let mut out = Vec::new();
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let p = entry.path();
            // A process can exit between listing and reading: skip it.
            let Ok(comm) = std::fs::read_to_string(p.join("comm")) else {
                continue;
            };
            let argv = std::fs::read(p.join("cmdline"))
                .map(|b| split_nul(&b))
                .unwrap_or_default();
            let environ = std::fs::read(p.join("environ")).ok().map(|b| {
                split_nul(&b)
                    .into_iter()
                    .filter_map(|kv| {
                        kv.split_once('=')
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                    })
                    .collect()
            });
            out.push(Process {
                pid,
                comm: comm.trim_end_matches('\n').to_string(),
                argv,
                environ,
            });
        }
        out
    }
}

#[cfg(target_os = "macos")]
mod platform {
    use super::Process;

    /// `ps` gives no environment, so every match counts (fail safe). `command=` rather than
    /// `comm=`: Claude Code sets its process title to `claude`, which only the command line shows.
    pub(crate) fn processes() -> Vec<Process> {
        let Ok(out) = std::process::Command::new("ps")
            .args(["-axww", "-o", "pid=,command="])
            .output()
        else {
            return vec![];
        };
        let me = std::process::id();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let line = line.trim_start();
                let (pid, command) = line.split_once(' ')?;
                let pid: u32 = pid.parse().ok()?;
                if pid == me {
                    return None;
                }
                // Arguments with spaces are split wrongly; only the first words are matched.
                let argv: Vec<String> = command.split_whitespace().map(str::to_string).collect();
                let comm = argv
                    .first()
                    .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
                    .unwrap_or_default();
                Some(Process {
                    pid,
                    comm,
                    argv,
                    environ: None,
                })
            })
            .collect()
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod platform {
    use super::Process;

    pub(crate) fn processes() -> Vec<Process> {
        vec![]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recognises_clients() {
        let code = RewritingClient::ClaudeCode;
        let desk = RewritingClient::ClaudeDesktop;
        assert!(matches(code, "claude", &v(&["claude"])));
        assert!(matches(
            code,
            "node",
            &v(&[
                "node",
                "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"
            ])
        ));
        assert!(!matches(code, "bash", &v(&["bash", "-c", "echo claude"])));
        assert!(!matches(code, "mcpjail", &v(&["mcpjail", "install"])));
        assert!(matches(
            desk,
            "electron",
            &v(&[
                "/usr/lib/claude-desktop/electron",
                "/usr/lib/claude-desktop/app.asar"
            ])
        ));
        assert!(matches(
            desk,
            "Claude",
            &v(&["/Applications/Claude.app/Contents/MacOS/Claude"])
        ));
        assert!(!matches(desk, "claude", &v(&["claude"])));
    }
}
