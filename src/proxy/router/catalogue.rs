//! The tool catalogue: the schemas learned from `tools/list` (the client's own and the
//! proxy's fetch), and where the proxy's own fetch stands ([`Fetch`]). A `tools/call` of a
//! tool the catalogue does not know waits while a fetch may still tell its schema.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};

use super::super::child::ServerChild;
use super::super::integrity::{self, Side};
use super::{Own, Router};
use crate::policy::ToolInfo;
use crate::proxy::pinning::parse_listing;

/// Where the proxy's own `tools/list` fetch stands.
#[derive(Debug)]
pub(super) enum Fetch {
    /// No list has been seen or asked for: calls of unknown tools wait for one.
    Unknown,
    /// A fetch is under way: calls of unknown tools wait (no longer than
    /// [`ProxyConfig::fetch_timeout`](crate::proxy::ProxyConfig::fetch_timeout)).
    InFlight(InFlight),
    /// A list is known and no fetch is under way.
    Known,
    /// The fetch was refused or timed out: calls are judged by their values, not held.
    Failed,
}

/// A fetch under way.
#[derive(Debug)]
pub(super) struct InFlight {
    /// The first page of the first fetch: a server that keeps changing its list cannot hold
    /// calls past the fetch timeout from here.
    since: Instant,
    /// Pages of the current pass (at most [`integrity::MAX_FETCH_PAGES`]).
    pages: usize,
    /// `tools/list_changed` arrived meanwhile: one more pass after this one (however many
    /// arrived — a storm costs two passes, not one per notification).
    again: bool,
    /// How many notifications this fetch absorbed (for one loud log line).
    coalesced: u64,
}

/// The tools the proxy knows the schemas of, and its fetch.
pub(super) struct Catalogue {
    /// Looked up once a call, by the tool's name: foldhash, like the table of requests in
    /// flight (SipHash was ~130 instructions a lookup); seeded per process, and capped at
    /// [`integrity::MAX_TOOLS`].
    pub tools: foldhash::HashMap<String, ToolInfo>,
    pub fetch: Fetch,
    /// The last page of the proxy's own fetch, as the server wrote its `result`.
    last_own_page: Option<String>,
    /// The client said `notifications/initialized`: the fetch starts once the client's
    /// messages that came with it are forwarded (see [`Catalogue::fetch_when_client_paused`]).
    due: bool,
}

impl Catalogue {
    pub fn new() -> Catalogue {
        Catalogue {
            tools: foldhash::HashMap::default(),
            fetch: Fetch::Unknown,
            last_own_page: None,
            due: false,
        }
    }

    /// Must a call of a tool (`known`: its schema is in the catalogue; `pins`: pins judge
    /// calls only after a listing) wait for the fetch?
    pub fn call_waits(&self, known: bool, pins: bool) -> bool {
        (!known || pins) && matches!(self.fetch, Fetch::Unknown | Fetch::InFlight(_))
    }

    /// Is a fetch waiting for the client's buffered messages to be forwarded?
    pub fn fetch_due(&self) -> bool {
        self.due
    }

    /// After `notifications/initialized`: the fetch goes to the server once the client's
    /// messages that arrived with it have been forwarded (the session loop starts it when no
    /// whole line of the client's is buffered). A client that sends `initialized` and its own
    /// `tools/list` together gets its listing first: the server is not made to produce the
    /// proxy's copy before the one the client waits for. A `tools/call` that needs the list
    /// before then starts the fetch itself.
    pub fn fetch_when_client_paused(&mut self) {
        self.due = true;
    }

    pub fn in_flight(&self) -> bool {
        matches!(self.fetch, Fetch::InFlight(_))
    }

    /// When waiting calls stop waiting for the fetch, given how long they may wait.
    pub fn deadline(&self, timeout: Duration) -> Option<Instant> {
        match &self.fetch {
            Fetch::InFlight(f) => Some(f.since + timeout),
            _ => None,
        }
    }
}

impl Router {
    /// Ask the server for its tools with a proxy-owned id (answered to the proxy only),
    /// unless a fetch is already in flight: there is never more than one.
    pub(super) fn start_fetch(&mut self, child: &mut ServerChild) {
        self.catalogue.due = false;
        if self.catalogue.in_flight() {
            return;
        }
        self.fetch_page(None, child);
    }

    fn fetch_page(&mut self, cursor: Option<Value>, child: &mut ServerChild) {
        if cursor.is_none() {
            self.pinning.begin_own_listing();
            if let Fetch::InFlight(f) = &mut self.catalogue.fetch {
                f.pages = 0;
            } else {
                // A page of a fetch that timed out may still come: it is answered to no one
                // now, so it is dropped quietly (as a cancelled request's is).
                let late: Vec<String> = self
                    .own_to_server
                    .iter()
                    .filter(|(_, o)| **o == Own::ToolsList)
                    .map(|(k, _)| k.clone())
                    .collect();
                for key in late {
                    self.own_to_server.remove(&key);
                    self.remember_cancelled(key);
                }
                self.catalogue.fetch = Fetch::InFlight(InFlight {
                    since: Instant::now(),
                    pages: 0,
                    again: false,
                    coalesced: 0,
                });
            }
        }
        if let Fetch::InFlight(f) = &mut self.catalogue.fetch {
            f.pages += 1;
        }
        let id = integrity::own_id();
        let mut params = serde_json::Map::new();
        if let Some(cursor) = cursor {
            params.insert("cursor".into(), cursor);
        }
        if !self.saw_initialize {
            if let Some(meta) = &self.client_meta {
                params.insert("_meta".into(), meta.clone());
            }
        }
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
        let mut line = req.to_string().into_bytes();
        line.push(b'\n');
        self.own_to_server
            .insert(Value::String(id).to_string(), Own::ToolsList);
        child.send(Bytes::from(line));
    }

    /// The fetch took too long: waiting calls are judged by their values.
    pub(super) fn fetch_timed_out(&mut self, child: &mut ServerChild) {
        tracing::warn!(
            "the server did not answer the proxy's tools/list in time; judging calls by their values"
        );
        self.catalogue.fetch = Fetch::Failed;
        self.release_held(child);
    }

    /// Learn one `tools/list` page (`own`: the proxy's fetch, else the client's request).
    /// Returns the page's `nextCursor`, or why the page could not be read (it is then neither
    /// learnt nor pinned; the pinning reports it).
    pub(super) fn learn_tools(&mut self, result: &str, own: bool) -> Result<Option<Value>, String> {
        // The client's own listing at start-up repeats, byte for byte, the page the proxy has
        // just fetched: learning it again (parsing, deriving every schema, loading the pins)
        // would give the same catalogue and pins, and was a third of the proxy's own work
        // before the first answer.
        if !own && self.catalogue.last_own_page.as_deref() == Some(result) {
            return Ok(None);
        }
        let text = result;
        let result = match parse_listing(text) {
            Ok(result) => result,
            Err(why) => {
                // Not remembered as the own page: the client's copy must be judged (and, in
                // block mode, withheld) too.
                if own {
                    self.catalogue.last_own_page = None;
                }
                self.pinning.unreadable_listing(&why, &mut self.log);
                return Err(why);
            }
        };
        if own {
            self.catalogue.last_own_page = Some(text.to_string());
        }
        let next = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if let Some(tools) = result.get("tools").and_then(Value::as_array) {
            self.pinning
                .observe_page(tools, own, next.is_none(), &mut self.log);
            let tools_map = &mut self.catalogue.tools;
            for tool in tools {
                if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    if tools_map.len() >= integrity::MAX_TOOLS && !tools_map.contains_key(name) {
                        self.violations.report(
                            &mut self.log,
                            Side::Server,
                            &format!(
                                "more than {} tools listed; `{}` and later new tools are \
                                 judged by their values only",
                                integrity::MAX_TOOLS,
                                integrity::shown_id(name)
                            ),
                        );
                        continue;
                    }
                }
                if let Some(mut info) = ToolInfo::from_tool(tool) {
                    // A policy file's read-only marking holds whatever the server says.
                    if self.config.read_only_tools.contains(&info.name) {
                        info.read_only = true;
                    }
                    tools_map.insert(info.name.clone(), info);
                } else if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    // A tool we cannot read the schema of is judged by value heuristics.
                    tools_map.remove(name);
                }
            }
            if matches!(self.catalogue.fetch, Fetch::Unknown) {
                self.catalogue.fetch = Fetch::Known;
            }
        }
        Ok(next)
    }

    /// `notifications/tools/list_changed`: fetch the list again — or, with a fetch in flight,
    /// once more after it, however many notifications arrive meanwhile.
    pub(super) fn on_tools_changed(&mut self, child: &mut ServerChild) {
        if let Fetch::InFlight(f) = &mut self.catalogue.fetch {
            f.again = true;
            f.coalesced += 1;
            return;
        }
        self.fetch_page(None, child);
    }

    /// A page of our own tools/list (`None`: the server refused it).
    pub(super) fn on_own_tools_page(&mut self, result: Option<&str>, child: &mut ServerChild) {
        let next = match result {
            // An unreadable page ends the fetch like a refused one (reported by the pinning).
            Some(result) => self.learn_tools(result, true).unwrap_or(None),
            None => None,
        };
        let Fetch::InFlight(f) = &mut self.catalogue.fetch else {
            // The late page of a fetch that timed out: learnt from, nothing more.
            return;
        };
        if std::mem::take(&mut f.again) {
            // The list changed while this pass was in flight: start over, once. Calls keep
            // waiting, but no longer than the fetch timeout from the first pass.
            let coalesced = std::mem::take(&mut f.coalesced);
            if coalesced >= 1000 {
                self.violations.report(
                    &mut self.log,
                    Side::Server,
                    &format!(
                        "{coalesced} tools/list_changed notifications during one tools/list \
                         fetch (coalesced into one more fetch)"
                    ),
                );
            }
            self.fetch_page(None, child);
            return;
        }
        let pages = f.pages;
        if result.is_none() {
            tracing::warn!(
                "the server refused the proxy's tools/list; judging calls by their values"
            );
            self.catalogue.fetch = Fetch::Failed;
            self.release_held(child);
            return;
        }
        match next {
            Some(_) if pages >= integrity::MAX_FETCH_PAGES => {
                self.violations.report(
                    &mut self.log,
                    Side::Server,
                    &format!(
                        "its tool list goes on past {} pages: the rest is not fetched",
                        integrity::MAX_FETCH_PAGES
                    ),
                );
                self.catalogue.fetch = Fetch::Known;
                self.release_held(child);
            }
            Some(cursor) => self.fetch_page(Some(cursor), child),
            None => {
                self.catalogue.fetch = Fetch::Known;
                self.release_held(child);
            }
        }
    }
}
