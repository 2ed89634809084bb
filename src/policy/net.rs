//! Network policy by name: the `--allow-domain` / `[net] allow_domains` rules and their matching.
//!
//! A rule is a host pattern and an optional port: `example.com` (ports 80 and 443),
//! `*.example.com` (any name under it, not `example.com` itself), `example.com:8443`, an IP
//! literal `203.0.113.7:443` or `[2001:db8::1]:443`. IP literals only ever match themselves: a
//! request to an address is refused unless that address is listed, so a server cannot go around
//! a name rule by dialling the address it resolves to. `localhost` is an ordinary name that must
//! be listed to be reachable (loopback stays closed unless asked).
//!
//! Pure code: no I/O, no resolution (the egress proxy resolves; see `proxy::egress`).

use std::fmt;
use std::net::IpAddr;

/// Ports a rule without `:PORT` allows.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// What a rule's host part matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum HostPattern {
    /// One name, lower-case, without a trailing dot.
    Exact(String),
    /// `*.SUFFIX`: any name ending in `.SUFFIX` (the suffix itself is not matched).
    Subdomains(String),
    /// One address.
    Ip(IpAddr),
}

/// One allowed destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct DomainRule {
    pub host: HostPattern,
    /// `None`: [`DEFAULT_PORTS`].
    pub port: Option<u16>,
}

/// Why a rule could not be parsed (shown with the flag or policy line that held it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{rule}` is not a domain rule: {why}")]
pub struct DomainRuleError {
    pub rule: String,
    pub why: String,
}

impl DomainRule {
    /// Parse `HOST`, `HOST:PORT`, `*.SUFFIX[:PORT]`, `IP`, `IP:PORT` or `[IPV6]:PORT`.
    pub fn parse(text: &str) -> Result<DomainRule, DomainRuleError> {
        let err = |why: &str| DomainRuleError {
            rule: text.to_string(),
            why: why.to_string(),
        };
        let t = text.trim();
        if t.is_empty() {
            return Err(err("it is empty"));
        }
        if t.contains("://") || t.contains('/') {
            return Err(err(
                "write a host name, not a URL (e.g. `example.com` or `example.com:8443`)",
            ));
        }
        // A bare IPv6 address has colons of its own; only the bracketed form takes a port.
        if let Ok(ip) = t.parse::<IpAddr>() {
            return Ok(DomainRule {
                host: HostPattern::Ip(ip),
                port: None,
            });
        }
        let (host, port) = if let Some(rest) = t.strip_prefix('[') {
            let (inside, after) = rest
                .split_once(']')
                .ok_or_else(|| err("an opening `[` without a closing `]`"))?;
            let ip: IpAddr = inside
                .parse()
                .map_err(|_| err("the text between `[` and `]` is not an IPv6 address"))?;
            let port = match after {
                "" => None,
                p => Some(parse_port(p.strip_prefix(':').unwrap_or(p)).map_err(|w| err(&w))?),
            };
            return Ok(DomainRule {
                host: HostPattern::Ip(ip),
                port,
            });
        } else {
            match t.rsplit_once(':') {
                Some((h, p)) => (h, Some(parse_port(p).map_err(|w| err(&w))?)),
                None => (t, None),
            }
        };
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(DomainRule {
                host: HostPattern::Ip(ip),
                port,
            });
        }
        let lower = host.trim_end_matches('.').to_ascii_lowercase();
        let (pattern, name) = match lower.strip_prefix("*.") {
            Some(suffix) => (HostPattern::Subdomains(suffix.to_string()), suffix),
            None => (HostPattern::Exact(lower.clone()), lower.as_str()),
        };
        if name.contains('*') {
            return Err(err(
                "`*` is only allowed as the whole first label (`*.example.com`)",
            ));
        }
        if !is_host_name(name) {
            return Err(err(
                "a host name is letters, digits, `-` and `.` (IDN names in their xn-- form)",
            ));
        }
        if matches!(pattern, HostPattern::Subdomains(_)) && !name.contains('.') {
            return Err(err(
                "a wildcard needs at least two labels after `*.` (`*.example.com`, not `*.com`)",
            ));
        }
        Ok(DomainRule {
            host: pattern,
            port,
        })
    }

    /// Does this rule allow `host` (a name or an address, as the client wrote it) on `port`?
    pub fn matches(&self, host: &Host, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => DEFAULT_PORTS.contains(&port),
        };
        if !port_ok {
            return false;
        }
        match (&self.host, host) {
            (HostPattern::Exact(want), Host::Name(name)) => want == name,
            (HostPattern::Subdomains(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (HostPattern::Ip(want), Host::Ip(ip)) => want == ip,
            _ => false,
        }
    }

    /// Is this the rule that lets a server reach its own machine (`localhost`, a loopback
    /// address)? Such rules are the only way loopback opens.
    pub fn names_loopback(&self) -> bool {
        match &self.host {
            HostPattern::Exact(name) => name == "localhost",
            HostPattern::Ip(ip) => ip.is_loopback(),
            HostPattern::Subdomains(_) => false,
        }
    }
}

impl fmt::Display for DomainRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.host, self.port) {
            (HostPattern::Exact(n), None) => write!(f, "{n}"),
            (HostPattern::Exact(n), Some(p)) => write!(f, "{n}:{p}"),
            (HostPattern::Subdomains(s), None) => write!(f, "*.{s}"),
            (HostPattern::Subdomains(s), Some(p)) => write!(f, "*.{s}:{p}"),
            (HostPattern::Ip(IpAddr::V6(ip)), Some(p)) => write!(f, "[{ip}]:{p}"),
            (HostPattern::Ip(ip), Some(p)) => write!(f, "{ip}:{p}"),
            (HostPattern::Ip(ip), None) => write!(f, "{ip}"),
        }
    }
}

/// A destination host as a client asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// Lower-case, without a trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// Parse a host as it appears in a request (`Example.COM.`, `10.0.0.1`, `[::1]`, `::1`).
    /// `None` for text that is neither a host name nor an address.
    pub fn parse(text: &str) -> Option<Host> {
        let t = text
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .unwrap_or(text);
        if let Ok(ip) = t.parse::<IpAddr>() {
            return Some(Host::Ip(ip));
        }
        let name = t.trim_end_matches('.').to_ascii_lowercase();
        is_host_name(&name).then_some(Host::Name(name))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => write!(f, "{n}"),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// The rule text that would allow `host:port` (what a denial's hint suggests).
pub fn rule_for(host: &Host, port: u16) -> String {
    if DEFAULT_PORTS.contains(&port) && matches!(host, Host::Name(_)) {
        host.to_string()
    } else {
        format!("{host}:{port}")
    }
}

/// The first rule allowing `host:port`, if any.
pub fn allowing<'a>(rules: &'a [DomainRule], host: &Host, port: u16) -> Option<&'a DomainRule> {
    rules.iter().find(|r| r.matches(host, port))
}

/// A destination the egress proxy refused, proposed as a rule (`policy learn --from-log`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DomainProposal {
    /// The rule text that would allow it (`api.example.com`, `x.test:8443`, `10.0.0.1:443`).
    pub rule: String,
    /// How many requests it refused.
    pub denied: usize,
    /// Whether the server asked for an address rather than a name.
    pub address: bool,
}

/// The destinations refused in an audit log (`--log-file` JSON lines, `"event": "net"`), for
/// `server` if given, as rules, most-refused first. Lines that are not net events are skipped.
pub fn propose_from_audit(text: &str, server: Option<&str>) -> Vec<DomainProposal> {
    let mut out: Vec<DomainProposal> = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["event"] != "net" || v["decision"] != "deny" {
            continue;
        }
        if server.is_some_and(|s| v["server"] != s) {
            continue;
        }
        let (Some(host), Some(port)) = (
            v["host"].as_str().and_then(Host::parse),
            v["port"].as_u64().and_then(|p| u16::try_from(p).ok()),
        ) else {
            continue;
        };
        let rule = rule_for(&host, port);
        match out.iter_mut().find(|p| p.rule == rule) {
            Some(p) => p.denied += 1,
            None => out.push(DomainProposal {
                rule,
                denied: 1,
                address: matches!(host, Host::Ip(_)),
            }),
        }
    }
    out.sort_by(|a, b| b.denied.cmp(&a.denied).then(a.rule.cmp(&b.rule)));
    out
}

/// Hosts named by `http://` / `https://` URLs in `texts` (a server's argv and environment), as
/// rules: what a server was told to talk to (`policy derive` proposes them).
pub fn urls_in<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out = Vec::new();
    for text in texts {
        for (at, _) in text.match_indices("://") {
            let scheme_start = text[..at]
                .rfind(|c: char| !c.is_ascii_alphanumeric())
                .map_or(0, |i| i + 1);
            let default_port = match text[scheme_start..at].to_ascii_lowercase().as_str() {
                "http" | "ws" => 80,
                "https" | "wss" => 443,
                _ => continue,
            };
            let rest = &text[at + 3..];
            let end = rest
                .find(['/', '?', '#', '"', '\'', ' ', ','])
                .unwrap_or(rest.len());
            let authority = &rest[..end];
            let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            let (host, port) = match authority.rsplit_once(':') {
                Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
                    match p.parse::<u16>() {
                        Ok(p) => (h, p),
                        Err(_) => (authority, default_port),
                    }
                }
                _ => (authority, default_port),
            };
            if let Some(host) = Host::parse(host) {
                let rule = rule_for(&host, port);
                if !out.contains(&rule) {
                    out.push(rule);
                }
            }
        }
    }
    out
}

fn parse_port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("`{text}` is not a port (1-65535)")),
        Ok(p) => Ok(p),
    }
}

fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Host {
        Host::parse(s).unwrap()
    }

    #[test]
    fn exact_names_allow_80_and_443_only_unless_a_port_is_written() {
        let r = DomainRule::parse("Example.COM.").unwrap();
        assert_eq!(r.to_string(), "example.com");
        assert!(r.matches(&name("example.com"), 443));
        assert!(r.matches(&name("EXAMPLE.com."), 80));
        assert!(!r.matches(&name("example.com"), 8443));
        assert!(!r.matches(&name("api.example.com"), 443));
        assert!(!r.matches(&name("example.com.evil.net"), 443));
        let r = DomainRule::parse("example.com:8443").unwrap();
        assert!(r.matches(&name("example.com"), 8443));
        assert!(!r.matches(&name("example.com"), 443));
    }

    #[test]
    fn wildcards_match_subdomains_not_the_suffix_or_lookalikes() {
        let r = DomainRule::parse("*.example.com").unwrap();
        assert!(r.matches(&name("api.example.com"), 443));
        assert!(r.matches(&name("a.b.example.com"), 443));
        assert!(!r.matches(&name("example.com"), 443));
        assert!(!r.matches(&name("evilexample.com"), 443));
        assert!(Host::parse(".example.com").is_none());
    }

    #[test]
    fn ip_literals_match_only_the_listed_address() {
        let r = DomainRule::parse("127.0.0.1:8080").unwrap();
        assert!(r.matches(&name("127.0.0.1"), 8080));
        assert!(!r.matches(&name("localhost"), 8080));
        assert!(r.names_loopback());
        let r = DomainRule::parse("[::1]:9000").unwrap();
        assert_eq!(r.to_string(), "[::1]:9000");
        assert!(r.matches(&name("[::1]"), 9000));
        let r = DomainRule::parse("example.com").unwrap();
        assert!(!r.matches(&name("93.184.216.34"), 443));
    }

    #[test]
    fn bad_rules_say_what_to_write() {
        for bad in [
            "",
            "https://example.com",
            "*.com",
            "a.*.example.com",
            "example.com:0",
            "example.com:x",
            "bad name",
        ] {
            let e = DomainRule::parse(bad).unwrap_err();
            assert!(!e.why.is_empty(), "{bad}");
        }
    }

    #[test]
    fn proposals_from_the_audit_log_count_refusals_per_rule() {
        let log = [
            r#"{"event":"net","server":"a","decision":"deny","host":"api.x.test","port":443}"#,
            r#"{"event":"net","server":"a","decision":"deny","host":"api.x.test","port":443}"#,
            r#"{"event":"net","server":"a","decision":"deny","host":"10.0.0.1","port":8080}"#,
            r#"{"event":"net","server":"a","decision":"allow","host":"ok.test","port":443}"#,
            r#"{"event":"net","server":"b","decision":"deny","host":"b.test","port":80}"#,
            r#"{"ts":"x","server":"a","tool":"fetch"}"#,
            "not json",
        ]
        .join("\n");
        let p = propose_from_audit(&log, Some("a"));
        assert_eq!(
            p.iter()
                .map(|p| (p.rule.as_str(), p.denied, p.address))
                .collect::<Vec<_>>(),
            vec![("api.x.test", 2, false), ("10.0.0.1:8080", 1, true)]
        );
        assert_eq!(propose_from_audit(&log, None).len(), 3);
    }

    #[test]
    fn urls_in_argv_become_rules() {
        let got = urls_in([
            "--base-url=https://API.example.com/v1",
            "http://user:pw@intranet.test:8080/x",
            "see https://docs.example.com, and ftp://skip.test",
            "no url here",
        ]);
        assert_eq!(
            got,
            vec!["api.example.com", "intranet.test:8080", "docs.example.com"]
        );
    }

    #[test]
    fn hint_rules_round_trip_through_the_parser() {
        for (host, port, want) in [
            ("denied.test", 443, "denied.test"),
            ("denied.test", 8080, "denied.test:8080"),
            ("10.1.2.3", 443, "10.1.2.3:443"),
            ("[::1]", 80, "[::1]:80"),
        ] {
            let h = name(host);
            let text = rule_for(&h, port);
            assert_eq!(text, want);
            assert!(DomainRule::parse(&text).unwrap().matches(&h, port));
        }
    }
}
