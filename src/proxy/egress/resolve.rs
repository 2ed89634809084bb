//! Names to addresses for the egress proxy (the server itself has no DNS in the jail).
//!
//! Loopback stays closed unless asked: a name other than `localhost` whose answer is a loopback,
//! unspecified or link-local (cloud metadata) address, or an address of one of this machine's own
//! interfaces (its LAN address reaches every service listening on `0.0.0.0` as surely as
//! loopback does), is refused — DNS rebinding would otherwise open the machine's own services to
//! a server allowed `*.example.com` — and `localhost` resolves to loopback only.
//!
//! The test-only name map ([`Resolver::with_test_names`], from `MCPJAIL_TEST_RESOLVE` in the
//! proxy's own environment — never the server's) stands in for public DNS in tests that have no
//! network: its answers are used as given. The proxy logs loudly when it is set.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::is_local;

/// The environment variable holding the test-only name map: `name=IP,name=IP`.
pub const TEST_RESOLVE_ENV: &str = "MCPJAIL_TEST_RESOLVE";

/// Why a name gave no address to dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// The answer is an address that stays closed (loopback, link-local): a policy refusal.
    Refused(String),
    /// No answer (the resolver failed, or the name has no address).
    Failed(String),
}

#[derive(Debug, Clone, Default)]
pub struct Resolver {
    test_names: Vec<(String, IpAddr)>,
}

impl Resolver {
    /// Names resolved by the system resolver of the proxy's machine.
    pub fn system() -> Resolver {
        Resolver::default()
    }

    /// Also answer these names with these addresses, as given (tests).
    pub fn with_test_names(names: Vec<(String, IpAddr)>) -> Resolver {
        Resolver { test_names: names }
    }

    /// Parse `name=IP,name=IP` (the value of [`TEST_RESOLVE_ENV`]).
    pub fn parse_test_names(text: &str) -> Result<Vec<(String, IpAddr)>, String> {
        let mut out = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, ip) = item
                .split_once('=')
                .ok_or_else(|| format!("`{item}` is not NAME=IP"))?;
            let ip: IpAddr = ip
                .trim()
                .parse()
                .map_err(|_| format!("`{ip}` in `{item}` is not an IP address"))?;
            out.push((name.trim().trim_end_matches('.').to_ascii_lowercase(), ip));
        }
        Ok(out)
    }

    /// The addresses to try for `name` (lower-case). `loopback_allowed`: the rule that allowed
    /// the name is `localhost` (or a loopback address).
    pub async fn resolve(
        &self,
        name: &str,
        loopback_allowed: bool,
    ) -> Result<Vec<IpAddr>, ResolveError> {
        let mapped: Vec<IpAddr> = self
            .test_names
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, ip)| *ip)
            .collect();
        if !mapped.is_empty() {
            return Ok(mapped);
        }
        if name == "localhost" {
            // Never asked of DNS: `localhost` is this machine, by definition (RFC 6761).
            return Ok(vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ]);
        }
        let answers: Vec<IpAddr> = tokio::net::lookup_host((name, 0))
            .await
            .map_err(|e| ResolveError::Failed(format!("cannot resolve {name}: {e}")))?
            .map(|a| a.ip())
            .collect();
        judge_answers(name, answers, &own_addresses(), loopback_allowed)
    }
}

/// The addresses of this machine's own interfaces, as the kernel lists them now (an empty list
/// if it cannot be read: loopback and link-local are refused regardless).
fn own_addresses() -> Vec<IpAddr> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let mut own = Vec::new();
    for interface in interfaces {
        let Some(address) = interface.address else {
            continue;
        };
        if let Some(v4) = address.as_sockaddr_in() {
            own.push(IpAddr::V4(v4.ip()));
        } else if let Some(v6) = address.as_sockaddr_in6() {
            own.push(IpAddr::V6(v6.ip()));
        }
    }
    own
}

/// What to dial of `answers` for `name`: all of them when the rule allows loopback; otherwise
/// only those neither local ([`is_local`]) nor one of `own`, and a refusal if none is left.
fn judge_answers(
    name: &str,
    answers: Vec<IpAddr>,
    own: &[IpAddr],
    loopback_allowed: bool,
) -> Result<Vec<IpAddr>, ResolveError> {
    let unmapped = |ip: &IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(*ip, IpAddr::V4),
        v4 => *v4,
    };
    let (local, public): (Vec<IpAddr>, Vec<IpAddr>) = answers
        .into_iter()
        .partition(|ip| is_local(ip) || own.contains(&unmapped(ip)));
    if loopback_allowed {
        let mut all = public;
        all.extend(local);
        return Ok(all);
    }
    if public.is_empty() {
        return Err(match local.first() {
            Some(ip) => ResolveError::Refused(format!(
                "{name} resolves to {ip}, a loopback, link-local or this machine's own address, \
                 which stays closed (hint: list the address itself, e.g. --allow-domain \
                 {ip}:PORT, if that is really meant)"
            )),
            None => ResolveError::Failed(format!("{name} has no address")),
        });
    }
    Ok(public)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_test_map() {
        let m = Resolver::parse_test_names("Allowed.Test=127.0.0.1, v6.test=::1").unwrap();
        assert_eq!(
            m,
            vec![
                ("allowed.test".to_string(), "127.0.0.1".parse().unwrap()),
                ("v6.test".to_string(), "::1".parse().unwrap()),
            ]
        );
        assert!(Resolver::parse_test_names("x.test").is_err());
        assert!(Resolver::parse_test_names("x.test=nope").is_err());
    }

    #[tokio::test]
    async fn localhost_is_loopback_without_dns_and_mapped_names_are_used_as_given() {
        let r = Resolver::with_test_names(vec![("a.test".into(), "127.0.0.2".parse().unwrap())]);
        assert_eq!(
            r.resolve("a.test", false).await.unwrap(),
            vec!["127.0.0.2".parse::<IpAddr>().unwrap()]
        );
        let local = r.resolve("localhost", true).await.unwrap();
        assert!(local.iter().all(|ip| ip.is_loopback()));
    }

    /// A wildcard rule's name pointed at this machine's LAN address reaches every service
    /// listening on 0.0.0.0, as loopback would: refused like it (control: the same answer is
    /// dialled when the address is not the machine's, and when the rule allows loopback).
    #[test]
    fn an_answer_that_is_this_machines_own_address_is_refused() {
        let lan: IpAddr = "192.0.2.2".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.2".parse().unwrap();
        let public: IpAddr = "203.0.113.9".parse().unwrap();
        let own = [IpAddr::V4(Ipv4Addr::LOCALHOST), lan];
        for answer in [lan, mapped] {
            let refused = judge_answers("a.example.com", vec![answer], &own, false);
            assert!(
                matches!(&refused, Err(ResolveError::Refused(why)) if why.contains("own address")),
                "{answer}: {refused:?}"
            );
            assert_eq!(
                judge_answers("a.example.com", vec![answer], &[], false),
                Ok(vec![answer])
            );
            assert_eq!(
                judge_answers("a.example.com", vec![answer], &own, true),
                Ok(vec![answer])
            );
        }
        assert_eq!(
            judge_answers("a.example.com", vec![lan, public], &own, false),
            Ok(vec![public])
        );
    }

    /// The interface list is really read: loopback is always one of this machine's own.
    #[test]
    fn own_addresses_come_from_the_interfaces() {
        assert!(own_addresses().contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)));
    }
}
