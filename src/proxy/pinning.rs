//! Tool pinning in the proxy (rug-pull detection): every `tools/list` page the proxy sees is
//! compared with the server's pins, changes are reported, and `--pin block` holds changed
//! tools back from the client until a person approves them.
//!
//! The pin store itself (hashing, trust on first use, approval) is
//! [`crate::policy::pins`]; this module decides *when* the proxy touches it and what the client
//! and the logs see. Only `tools/list` results reach the store (read, compare, save when
//! something new was recorded): `tools/call` consults an in-memory set, so pin I/O never sits
//! on the call path.
//!
//! The store is re-read for every page rather than cached, so `mcpjail pin approve`, run while
//! the proxy is up, takes effect at the server's next listing and is not overwritten by a
//! stale copy held here.
//!
//! Removals need the whole listing (a tool missing from page 1 may be on page 2), so they are
//! computed only over the proxy's own fetch, which always walks every page. The client's
//! listings still report additions and changes, and are still filtered in block mode.
//!
//! A tool is judged by its name, as calls are: a name listed twice is unapproved if any of its
//! entries differs from the pin, and block mode then hides every entry of it. A listing that
//! cannot be parsed even leniently ([`parse_listing`]) cannot be compared with the pins: block
//! mode withholds it (the client's `tools/list` gets an error saying why), warn mode forwards
//! it with a warning. Neither lets it pass silently.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::{json, Value};

use super::audit::CallLog;
use super::check::Refusal;
use crate::policy::pins::{resolve_name, PinError, PinKey, PinMode, PinStore};
use crate::policy::Access;
use crate::shown::shown;

/// The proxy's pinning state for one session.
#[derive(Debug)]
pub struct Pinning {
    mode: PinMode,
    /// The pin file's key (also the name `mcpjail pin` commands take), worked out when the
    /// store is first opened (see [`Pinning::key`]).
    key: std::cell::OnceCell<PinKey>,
    /// What the key is made from: the server's name and its identity.
    name: String,
    identity: String,
    server: String,
    home: Option<PathBuf>,
    /// Tools whose latest listed definition differs from the pin (pending approval).
    unapproved: HashSet<String>,
    /// Changes already reported (tool → the changed hash) and removals already reported: a
    /// server listed many times (each client request, each list_changed) reports each change
    /// once; a tool seen as pinned again, or listed again, re-arms its report.
    reported_changed: HashMap<String, String>,
    reported_removed: HashSet<String>,
    /// Names on the pages of the proxy's own fetch so far; `None` outside a fetch.
    own_listing: Option<HashSet<String>>,
    /// The store could not be read or written: reported once, not again for every page.
    store_failed: bool,
    /// `--pin block`: the latest tool list could not be read, so what the tools are now is
    /// unknown: every call is refused until a listing can be compared again.
    unchecked: bool,
}

/// Can `--pin block` work for this server? Checked once at start-up (the name must be usable
/// as a file name, the state directory known, an existing pin file readable): a user who asked
/// for blocking gets an error before the server starts, not a session without protection. In
/// the default warn mode the same problems are reported once during the session instead, so a
/// damaged pin file never keeps a server from starting. `key` is only worked out for `block`:
/// the server's identity and its SHA-256 are otherwise not needed before the server starts.
pub fn check_settings(
    mode: PinMode,
    key: impl FnOnce() -> PinKey,
    home: Option<&Path>,
) -> Result<(), PinError> {
    if mode != PinMode::Block {
        return Ok(());
    }
    PinStore::load_keyed(&key(), home).map(|_| ())
}

impl Pinning {
    /// Pinning for the server `name` whose identity is `identity` (see [`PinKey`]).
    pub fn new(mode: PinMode, name: &str, identity: String, home: Option<PathBuf>) -> Pinning {
        Pinning {
            mode,
            server: PinKey::label_for(name),
            key: std::cell::OnceCell::new(),
            name: name.to_string(),
            identity,
            home,
            unapproved: HashSet::new(),
            reported_changed: HashMap::new(),
            reported_removed: HashSet::new(),
            own_listing: None,
            store_failed: false,
            unchecked: false,
        }
    }

    /// The pin key. Made on first use, not at start-up: its digest is the process's first
    /// SHA-256, whose first use asks the CPU for its features (`CPUID`: ~17 µs in a VM, where each
    /// one exits to the hypervisor), and at start-up that lay between the client's first message
    /// and its forwarding. With `--pin off` it is never needed.
    fn key(&self) -> &PinKey {
        self.key
            .get_or_init(|| PinKey::new(&self.name, &self.identity))
    }

    /// The proxy starts its own `tools/list` fetch (first page).
    pub fn begin_own_listing(&mut self) {
        if self.mode != PinMode::Off {
            self.own_listing = Some(HashSet::new());
        }
    }

    /// One `tools/list` page: pin new tools, record and report changed ones, and (at the end
    /// of the proxy's own fetch) report removed ones. `own`: the page answers the proxy's own
    /// fetch; `last`: it has no `nextCursor`.
    pub fn observe_page(&mut self, tools: &[Value], own: bool, last: bool, log: &mut CallLog) {
        if self.mode == PinMode::Off {
            return;
        }
        if last {
            self.unchecked = false;
        }
        let mut store = match PinStore::load_keyed(self.key(), self.home.as_deref()) {
            Ok(store) => store,
            Err(err) => {
                self.store_failure(&err);
                return;
            }
        };
        // Compare before observing: the diff is what this listing shows, even if saving fails.
        let diff = store.compare(tools);
        if let Err(err) = store.observe(tools) {
            self.store_failure(&err);
        }
        self.refresh_name(&store);
        // A name is unapproved if ANY of its entries differs from its pin: a pinned copy listed
        // after a changed one must not clear it (the client may use either entry).
        let changed: HashSet<&str> = tools
            .iter()
            .filter(|t| !store.is_approved(t))
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .collect();
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            self.reported_removed.remove(name);
            if changed.contains(name) {
                self.unapproved.insert(name.to_string());
            } else {
                self.unapproved.remove(name);
                self.reported_changed.remove(name);
            }
        }

        if !diff.added.is_empty() {
            let names = shown_names(&diff.added);
            // The record first, then the lines on stderr: whoever sees a line finds the record.
            log.event(
                "pin",
                json!({"change": "added", "tools": diff.added, "pin_file": store.path()}),
            );
            tracing::info!("pinned {} new tool(s): {names}", diff.added.len());
            log.note(&format!(
                "pins: pinned {} new tool(s) on first sight: {names}",
                diff.added.len()
            ));
        }
        for name in &diff.changed {
            let hash = tools
                .iter()
                .find(|t| {
                    t.get("name").and_then(Value::as_str) == Some(name) && !store.is_approved(t)
                })
                .map(crate::policy::pins::tool_hash)
                .unwrap_or_default();
            if self.reported_changed.get(name) == Some(&hash) {
                continue;
            }
            self.reported_changed.insert(name.clone(), hash.clone());
            let consequence = match self.mode {
                PinMode::Block => "hidden from the client and refused until approved",
                _ => "still offered to the client (--pin warn)",
            };
            let approve = self.approve_command(name);
            log.event(
                "pin",
                json!({"change": "changed", "tool": name, "hash": hash,
                       "blocked": self.mode == PinMode::Block, "approve": approve}),
            );
            tracing::warn!(
                "tool {} of server {} changed since it was pinned (description, input schema or \
                 annotations): {consequence}; review it with `mcpjail pin list {}` and accept it \
                 with `{approve}`",
                shown(name),
                shown(&self.server),
                shell_word(&self.server)
            );
            log.note(&format!(
                "pins: tool {} CHANGED since it was pinned: {consequence}; approve with `{approve}`",
                shown(name)
            ));
        }

        if own {
            if let Some(listing) = self.own_listing.as_mut() {
                for tool in tools {
                    if let Some(name) = tool.get("name").and_then(Value::as_str) {
                        listing.insert(name.to_string());
                    }
                }
            }
            if last {
                if let Some(listing) = self.own_listing.take() {
                    self.report_removed(&store, &listing, log);
                }
            }
        }
    }

    fn report_removed(&mut self, store: &PinStore, listing: &HashSet<String>, log: &mut CallLog) {
        let removed: Vec<String> = store
            .file()
            .tools
            .keys()
            .filter(|name| !listing.contains(*name))
            .filter(|name| self.reported_removed.insert((*name).clone()))
            .cloned()
            .collect();
        // A removed tool stays in `unapproved` if it was there: the server may still accept
        // calls to a tool it no longer lists, and block mode keeps refusing them.
        if removed.is_empty() {
            return;
        }
        let names = shown_names(&removed);
        log.event("pin", json!({"change": "removed", "tools": &removed}));
        tracing::info!("pinned tool(s) no longer listed: {names}");
        log.note(&format!(
            "pins: {} pinned tool(s) no longer listed (their pins are kept): {names}",
            removed.len()
        ));
    }

    /// The name messages give `mcpjail pin`: the label while it names this server's pins
    /// alone, else the full key.
    fn refresh_name(&mut self, store: &PinStore) {
        if let Some(dir) = store.path().parent() {
            let key = self.key();
            self.server = if resolve_name(dir, &key.label) == key.key {
                key.label.clone()
            } else {
                key.key.clone()
            };
        }
    }

    fn store_failure(&mut self, err: &PinError) {
        if !std::mem::replace(&mut self.store_failed, true) {
            tracing::error!(
                "tool pinning for server {}: {err}; hint: fix or remove the pin file, or run \
                 with --pin off",
                shown(&self.server)
            );
        }
    }

    fn approve_command(&self, tool: &str) -> String {
        format!(
            "mcpjail pin approve {} {}",
            shell_word(&self.server),
            shell_word(tool)
        )
    }

    /// `--pin block`: a listing may have tools taken out before the client sees it, so it is
    /// learnt before it is forwarded.
    pub fn rewrites_listings(&self) -> bool {
        self.mode == PinMode::Block
    }

    /// `--pin block`: a call that arrives while the proxy is fetching the tool list (at start,
    /// or after `notifications/tools/list_changed`) waits for it, so a tool changed in that
    /// listing is refused rather than slipping through before the proxy has seen the change.
    pub fn judges_calls_after_listing(&self) -> bool {
        self.mode == PinMode::Block
    }

    /// A `tools/list` page that could not be parsed, so it could not be compared with the pins
    /// (`why`: what [`parse_listing`] said). Reported every time, loudly: in warn mode the
    /// listing still reaches the client unchecked, in block mode it is withheld (the caller
    /// answers the client's request with [`Pinning::withheld_message`]).
    pub fn unreadable_listing(&mut self, why: &str, log: &mut CallLog) {
        let consequence = match self.mode {
            PinMode::Off => return,
            PinMode::Block => {
                self.unchecked = true;
                "withheld from the client, and every tool call refused until a listing can be \
                 checked (--pin block)"
            }
            PinMode::Warn => "forwarded to the client UNCHECKED (--pin warn)",
        };
        log.event(
            "pin",
            json!({"change": "unreadable", "reason": why,
                   "blocked": self.mode == PinMode::Block}),
        );
        tracing::warn!(
            "server {} sent a tool list mcpjail cannot parse, so it was not compared with the \
             pins: {why}; {consequence}",
            shown(&self.server)
        );
        log.note(&format!(
            "pins: a tool list could not be checked ({why}): {consequence}"
        ));
    }

    /// The error message the client gets for a `tools/list` withheld in block mode.
    pub fn withheld_message(why: &str) -> String {
        format!(
            "mcpjail could not check the tool list against the server's pins, so --pin block \
             withholds it: {why} (hint: the server must send a listing mcpjail can parse, or run \
             with --pin warn to receive it unchecked)"
        )
    }

    /// `--pin block`: the refusal for a `tools/call` of a changed, unapproved tool (the same
    /// shape as a path denial, so clients show it the same way). In-memory only.
    pub fn refusal(&self, tool: &str) -> Option<Refusal> {
        if self.mode == PinMode::Block && self.unchecked {
            return Some(Refusal {
                argument: String::new(),
                path: String::new(),
                access: Access::Read,
                reason: format!(
                    "the server's latest tool list could not be checked against its pins, so \
                     what `{tool}` is now is unknown, and --pin block refuses every call until \
                     a listing can be checked (hint: the server must send a tool list mcpjail \
                     can parse, or run with --pin warn)"
                ),
                kind: "pin_changed",
                roots: Vec::new(),
            });
        }
        if self.mode != PinMode::Block || !self.unapproved.contains(tool) {
            return None;
        }
        Some(Refusal {
            argument: String::new(),
            path: String::new(),
            access: Access::Read,
            reason: format!(
                "the tool `{tool}` changed since it was pinned (its description, input schema or \
                 annotations differ from the approved definition), and --pin block holds it back \
                 until a person approves the change with `{}`",
                self.approve_command(tool)
            ),
            kind: "pin_changed",
            roots: Vec::new(),
        })
    }

    /// `--pin block`: the client's `tools/list` response without the unapproved tools, or
    /// `None` when nothing has to go (the caller then forwards the server's original bytes).
    ///
    /// This is the one place the proxy re-serialises a server message: hiding a tool cannot be
    /// done by forwarding bytes unchanged, and forwarding the poisoned description is exactly
    /// what block mode exists to prevent. Everything else in the message is kept as parsed.
    pub fn hide_unapproved(&self, line: &[u8]) -> Option<Bytes> {
        if self.mode != PinMode::Block || self.unapproved.is_empty() {
            return None;
        }
        let mut msg = std::str::from_utf8(line)
            .ok()
            .and_then(|t| parse_listing(t).ok())?;
        let tools = msg.pointer_mut("/result/tools")?.as_array_mut()?;
        let before = tools.len();
        tools.retain(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .is_none_or(|name| !self.unapproved.contains(name))
        });
        if tools.len() == before {
            return None;
        }
        let mut out = serde_json::to_vec(&msg).ok()?;
        out.push(b'\n');
        Some(Bytes::from(out))
    }
}

/// Parse a `tools/list` result (or the message holding it) for pinning, as leniently as JSON
/// allows: a lone UTF-16 surrogate escape (valid JSON, which `serde_json` refuses) is read as
/// U+FFFD, as [`crate::proxy::message::parse_params`] does for requests. Text that parsed before
/// parses to the same value, so existing pins keep their hashes. What still cannot be parsed —
/// a number beyond `f64` such as `1e400`, which JavaScript reads as `Infinity` — is an error
/// naming the problem: a listing that cannot be pinned must not pass as if it had been.
pub fn parse_listing(text: &str) -> Result<Value, String> {
    let text = crate::proxy::message::replace_lone_surrogates(text);
    serde_json::from_str(&text).map_err(|e| format!("it is not JSON mcpjail can read ({e})"))
}

fn shown_names(names: &[String]) -> String {
    names
        .iter()
        .map(|n| shown(n))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Quote a word for a shell command line only when it needs it.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@' | '/'));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hiding_rewrites_only_when_needed() {
        let mut p = Pinning::new(PinMode::Block, "srv", "srv".into(), None);
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"x"}}"#;
        assert!(p.hide_unapproved(line).is_none());
        p.unapproved.insert("b".into());
        let out: Value = serde_json::from_slice(&p.hide_unapproved(line).unwrap()).unwrap();
        assert_eq!(
            out,
            json!({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"nextCursor":"x"}})
        );
        assert!(p.refusal("b").is_some());
        assert!(p.refusal("a").is_none());
        let mut warn = Pinning::new(PinMode::Warn, "srv", "srv".into(), None);
        warn.unapproved.insert("b".into());
        assert!(warn.hide_unapproved(line).is_none());
        assert!(warn.refusal("b").is_none());
    }

    #[test]
    fn quotes_and_escapes_server_chosen_words() {
        assert_eq!(shell_word("read_file"), "read_file");
        assert_eq!(shell_word("it's here"), r"'it'\''s here'");
        assert_eq!(shown("a\nb\x1b]0;T\x07"), r"a\nb\x1b]0;T\x07");
    }
}
