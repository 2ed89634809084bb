//! SOCKS5 (RFC 1928) `CONNECT`, no authentication: for clients that use `ALL_PROXY=socks5h://`.
//! Names are sent to the proxy unresolved (`socks5h`; the jail has no DNS). A denied destination
//! gets reply 0x02 ("connection not allowed by ruleset") and a `NET DENY` log line with the hint.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{relay, Decision, Egress, HEAD_TIMEOUT};
use crate::policy::net::Host;

pub(super) const VERSION: u8 = 0x05;
const NO_AUTH: u8 = 0x00;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CMD_CONNECT: u8 = 0x01;
const REPLY_OK: u8 = 0x00;
const REPLY_NOT_ALLOWED: u8 = 0x02;
const REPLY_HOST_UNREACHABLE: u8 = 0x04;
const REPLY_CMD_UNSUPPORTED: u8 = 0x07;
const REPLY_ADDR_UNSUPPORTED: u8 = 0x08;

pub(super) async fn serve(egress: &Egress, mut client: TcpStream) -> std::io::Result<()> {
    let target = match crate::proxy::timer::timeout(HEAD_TIMEOUT, handshake(&mut client)).await {
        Err(_) => return Ok(()),
        Ok(r) => r?,
    };
    let (host, port) = match target {
        Ok(t) => t,
        Err(code) => return reply(&mut client, code).await,
    };
    let kind = "SOCKS5";
    let started = Instant::now();
    match egress.decide(&host, port, kind).await {
        Decision::Denied(_) => reply(&mut client, REPLY_NOT_ALLOWED).await,
        Decision::Unreachable(_) => reply(&mut client, REPLY_HOST_UNREACHABLE).await,
        Decision::Open(mut upstream, rule) => {
            reply(&mut client, REPLY_OK).await?;
            let (up, down, error) = relay(&mut client, &mut upstream).await;
            egress.log_done(&host, port, kind, &rule, (up, down), started, error);
            Ok(())
        }
    }
}

/// Method negotiation and the request: the destination, or the reply code refusing it.
async fn handshake(client: &mut TcpStream) -> std::io::Result<Result<(Host, u16), u8>> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    if !methods.contains(&NO_AUTH) {
        client.write_all(&[VERSION, NO_ACCEPTABLE_METHOD]).await?;
        client.shutdown().await?;
        return Err(std::io::Error::other(
            "SOCKS5 client offers no method without authentication",
        ));
    }
    client.write_all(&[VERSION, NO_AUTH]).await?;

    let mut req = [0u8; 4];
    client.read_exact(&mut req).await?;
    if req[0] != VERSION {
        return Ok(Err(REPLY_CMD_UNSUPPORTED));
    }
    let host = match req[3] {
        0x01 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a).await?;
            Some(Host::Ip(IpAddr::V4(Ipv4Addr::from(a))))
        }
        0x04 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a).await?;
            Some(Host::Ip(IpAddr::V6(Ipv6Addr::from(a))))
        }
        0x03 => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len).await?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name).await?;
            std::str::from_utf8(&name).ok().and_then(Host::parse)
        }
        _ => return Ok(Err(REPLY_ADDR_UNSUPPORTED)),
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await?;
    let port = u16::from_be_bytes(port);
    if req[1] != CMD_CONNECT {
        return Ok(Err(REPLY_CMD_UNSUPPORTED));
    }
    match host {
        Some(h) if port != 0 => Ok(Ok((h, port))),
        _ => Ok(Err(REPLY_ADDR_UNSUPPORTED)),
    }
}

async fn reply(client: &mut TcpStream, code: u8) -> std::io::Result<()> {
    // The bound address is not meaningful to a client behind a proxy: 0.0.0.0:0.
    client
        .write_all(&[VERSION, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        .await?;
    if code != REPLY_OK {
        client.shutdown().await?;
    }
    Ok(())
}
