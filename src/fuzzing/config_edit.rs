//! `mcpjail install`'s config edit (`clients::apply`) on arbitrary JSONC and TOML client
//! configs, in memory.
//!
//! Input: byte 0 picks the client (and so the format and where servers live), the rest is the
//! file's text. Invariants: nothing panics; every planned file parses; every wrapped entry reads
//! back wrapped and unwraps to exactly its original command and args; and reversing the plan
//! entry by entry (what `uninstall` does when the file was edited since, so the backup no
//! longer applies) gives back the original bytes exactly: unwrap(wrap(x)) == x. (`plan_install`
//! itself refuses a plan whose document, with the wrapped values put back, differs from the
//! original in anything else.)

use std::path::{Path, PathBuf};

use crate::clients::apply::{plan_install, reverse_changes};
use crate::clients::scan::{entries_of, parse, FileScan};
use crate::clients::{config_file_for_record, wrap, ClientId};

const CLIENTS: &[(ClientId, &str)] = &[
    (ClientId::ClaudeCode, "/fuzz/project/.mcp.json"),
    (
        ClientId::ClaudeDesktop,
        "/fuzz/home/.config/Claude/claude_desktop_config.json",
    ),
    (ClientId::Vscode, "/fuzz/project/.vscode/mcp.json"),
    (ClientId::Zed, "/fuzz/home/.config/zed/settings.json"),
    (ClientId::Codex, "/fuzz/home/.codex/config.toml"),
    (ClientId::Cursor, "/fuzz/project/.cursor/mcp.json"),
];

pub fn run(data: &[u8]) {
    let [pick, rest @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (client, path) = CLIENTS[usize::from(*pick) % CLIENTS.len()];
    let file = config_file_for_record(client, PathBuf::from(path));
    let Ok(entries) = entries_of(&file, text) else {
        return;
    };
    let scan = FileScan {
        file: file.clone(),
        text: Some(text.to_string()),
        error: None,
        entries,
    };
    let (plans, _problems) = plan_install(&[scan], Path::new("/usr/local/bin/mcpjail-proxy"));
    for plan in plans {
        assert_eq!(plan.original, text);
        parse(file.format, &plan.new).expect("the wrapped file parses");
        let after = entries_of(&file, &plan.new).expect("the wrapped file's servers read");
        for change in &plan.changes {
            let entry = after
                .iter()
                .find(|e| e.pointer == change.pointer)
                .unwrap_or_else(|| panic!("{} vanished", change.pointer));
            let command = entry.command.as_deref().unwrap_or_default();
            assert!(
                wrap::is_wrapped(command, &entry.args),
                "{} not wrapped",
                change.server
            );
            let (cmd, args) = wrap::unwrap_args(command, &entry.args)
                .unwrap_or_else(|| panic!("{} does not unwrap", change.server));
            assert_eq!(
                cmd, change.old.command,
                "{} unwraps to another command",
                change.server
            );
            assert_eq!(
                args,
                change.old.args.clone().unwrap_or_default(),
                "{} unwraps to other args",
                change.server
            );
        }
        let mut notes = Vec::new();
        let back = reverse_changes(file.format, &plan.new, &plan.changes, &mut notes)
            .unwrap_or_else(|e| panic!("the wrapped file cannot be unwrapped: {e}"));
        assert_eq!(back, text, "unwrap(wrap(x)) != x; notes: {notes:?}");
    }
}
