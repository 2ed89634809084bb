//! The fixed name lists of the policy model: MCP client configs (always denied) and *protected*
//! names (readable, never writable).
//!
//! **Client configs** hold other servers' commands and tokens: a server that could read them learns
//! secrets, one that could write them gets its own command run by the next client start.
//! [`CLIENT_CONFIGS`] is the one list the policy denies; `src/clients` (which knows where every
//! client keeps its files) has a unit test asserting each of its clients' config files is covered.
//!
//! **Protected names** are files something else *runs later*: git hooks and `.git/config`
//! (`core.fsmonitor`, `core.hooksPath`), shell rc files, `.envrc`, editor and agent project
//! settings. A server may read them where it legitimately does (git reads `.git/config`), but a
//! write to one, at any depth inside write scope, plants code that runs outside the jail the next
//! time the user opens a shell, an editor or an agent there. The proxy refuses a path argument
//! that would write one ([`crate::policy::Scope::check`] with write access); the jail makes the
//! existing ones read-only in the server's mount namespace (see `sandbox::carve`). Names that do
//! not exist when the server starts cannot be protected by the kernel without pre-creating them
//! (Landlock cannot deny a name inside a writable directory): those are protected by the proxy
//! only, and the jail's notes say which.
//!
//! [`always_denied`] assembles the whole always-denied list for a user: credentials, the client
//! configs and mcpjail's own state (config, state, and the data directory with the registry).

use std::path::Path;

use super::xdg::{config_dir, data_dir, state_dir};

/// The always-denied globs for a user: credentials, MCP client configs, mcpjail's own state.
/// Home-relative entries are made absolute (and glob-escaped) against the canonical `home`;
/// `**/` entries apply anywhere.
///
/// SSH keys are listed by key type (`id_rsa*`, `id_ed25519*`, ...) rather than `id_*`, which
/// would also deny source files like `id_utils.rs`.
pub fn always_denied(home: Option<&Path>) -> Vec<String> {
    let mut out: Vec<String> = [
        "**/.env",
        "**/.env.*",
        "**/.envrc",
        "**/*.pem",
        "**/*.key",
        "**/*.p12",
        "**/*.pfx",
        "**/id_rsa*",
        "**/id_dsa*",
        "**/id_ecdsa*",
        "**/id_ed25519*",
        "**/id_xmss*",
        "**/.netrc",
        "**/.git-credentials",
        "**/.npmrc",
        "**/.pypirc",
    ]
    .iter()
    // MCP client configs (they hold other servers' commands and tokens): one table, see
    // `policy::deny`.
    .chain(CLIENT_CONFIGS)
    .map(|s| s.to_string())
    .collect();
    if let Some(home) = home {
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
        let esc = |rel: &str| format!("{}/{rel}", globset::escape(&home.to_string_lossy()));
        for rel in [
            ".ssh",
            ".aws",
            ".gnupg",
            ".kube",
            ".docker",
            ".azure",
            ".config/gcloud",
            ".config/gh",
            ".password-store",
            ".config/Claude",
        ] {
            out.push(esc(rel));
        }
    }
    // data_dir holds the default registry and its trusted keys: a server that could write
    // there could vouch for itself.
    for dir in [config_dir(home), state_dir(home), data_dir(home)]
        .into_iter()
        .flatten()
    {
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        out.push(globset::escape(&dir.to_string_lossy()));
    }
    out
}

/// MCP client config files, as glob patterns matched at any depth (bare relative suffixes under
/// `**/`). Keep in step with `src/clients/*` (a test there checks it).
pub const CLIENT_CONFIGS: &[&str] = &[
    // Claude Code: project `.mcp.json`, project and user settings, the user file.
    "**/.mcp.json",
    "**/.claude/settings*.json",
    "**/.claude.json",
    // Claude Code managed settings (Linux, macOS).
    "**/claude-code/managed-settings.json",
    "**/ClaudeCode/managed-settings.json",
    // Claude Desktop.
    "**/claude_desktop_config.json",
    // Cursor (project and user).
    "**/.cursor/mcp.json",
    // VS Code and VS Code Insiders (project and user).
    "**/.vscode/mcp.json",
    "**/Code/User/mcp.json",
    "**/Code - Insiders/User/mcp.json",
    // Windsurf.
    "**/.codeium/windsurf/mcp_config.json",
    // Gemini CLI (project and user).
    "**/.gemini/settings.json",
    // Cline (standalone and the VS Code extension's global storage).
    "**/cline_mcp_settings.json",
    // Zed (project `.zed/settings.json`, user `~/.config/zed/settings.json`).
    "**/.zed/settings.json",
    "**/zed/settings.json",
    // Codex.
    "**/.codex/config.toml",
];

/// Names that are readable but never writable, at any depth inside write scope (see the module
/// docs). A pattern matches the path itself and everything under it.
pub const PROTECTED: &[&str] = &[
    "**/.git/hooks",
    "**/.git/config",
    "**/.gitmodules",
    "**/.gitconfig",
    "**/.bashrc",
    "**/.bash_profile",
    "**/.bash_login",
    "**/.zshrc",
    "**/.zshenv",
    "**/.zprofile",
    "**/.profile",
    "**/.envrc",
    "**/.ripgreprc",
    "**/.vscode",
    "**/.idea",
    "**/.zed",
    "**/.cursor",
    "**/.claude/commands",
    "**/.claude/agents",
    "**/.claude/settings*.json",
    "**/.mcp.json",
    "**/.gemini",
    "**/.codex",
];

/// Protected names inside a repository's submodules' git directories (`.git/modules/<name>`,
/// nested for nested submodules): their hooks and config, which git runs and reads when it
/// works in the submodule (`git submodule update` from the top runs their `post-checkout`).
/// The jail's walk finds them by looking into `.git/modules` (see `sandbox::carve`).
pub const PROTECTED_IN_SUBMODULES: &[&str] =
    &["**/.git/modules/**/hooks", "**/.git/modules/**/config"];

/// The last components of the protected names, for walking a directory tree: `(parent, name)`
/// where `parent` is `None` for "any directory" or `Some(".git")` / `Some(".claude")` for names
/// that count only inside such a directory. `name` may end in `*` (a prefix match).
pub const PROTECTED_NAMES: &[(Option<&str>, &str)] = &[
    (Some(".git"), "hooks"),
    (Some(".git"), "config"),
    (None, ".gitmodules"),
    (None, ".gitconfig"),
    (None, ".bashrc"),
    (None, ".bash_profile"),
    (None, ".bash_login"),
    (None, ".zshrc"),
    (None, ".zshenv"),
    (None, ".zprofile"),
    (None, ".profile"),
    (None, ".envrc"),
    (None, ".ripgreprc"),
    (None, ".vscode"),
    (None, ".idea"),
    (None, ".zed"),
    (None, ".cursor"),
    (Some(".claude"), "commands"),
    (Some(".claude"), "agents"),
    (Some(".claude"), "settings*.json"),
    (None, ".mcp.json"),
    (None, ".gemini"),
    (None, ".codex"),
];

/// Is the entry `name` inside a directory named `parent` a protected name?
pub fn is_protected_name(parent: Option<&str>, name: &str) -> bool {
    PROTECTED_NAMES.iter().any(|(p, n)| {
        let parent_ok = match p {
            None => true,
            Some(p) => parent == Some(*p),
        };
        parent_ok && name_matches(n, name)
    })
}

fn name_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        Some((prefix, suffix)) => {
            name.len() >= prefix.len() + suffix.len()
                && name.starts_with(prefix)
                && name.ends_with(suffix)
        }
        None => pattern == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protected_pattern_has_a_walk_name_and_back() {
        assert_eq!(PROTECTED.len(), PROTECTED_NAMES.len());
        for ((parent, name), pattern) in PROTECTED_NAMES.iter().zip(PROTECTED) {
            let expected = match parent {
                Some(p) => format!("**/{p}/{name}"),
                None => format!("**/{name}"),
            };
            assert_eq!(&expected, pattern);
        }
    }

    #[test]
    fn protected_names_match_only_in_their_parent() {
        assert!(is_protected_name(Some(".git"), "hooks"));
        assert!(!is_protected_name(Some("src"), "hooks"));
        assert!(is_protected_name(Some("src"), ".bashrc"));
        assert!(is_protected_name(Some(".claude"), "settings.local.json"));
        assert!(!is_protected_name(Some(".claude"), "notes.md"));
        assert!(!is_protected_name(None, "config"));
    }
}
