//! Sockets from chosen loopback source addresses (plain TCP, WebSocket upgrades),
//! and what the host's kernel says about its sockets.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use jumpgate_protocol::Encoding;
use jumpgate_protocol::client::{Client, ClientError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::{Instant, sleep, timeout_at};

use super::Target;
use crate::driver::PATIENCE;

/// The kernel's memory in TCP buffers, all sockets of the host, KiB (`mem` of the
/// `TCP:` line of `/proc/net/sockstat`, in pages).
pub(super) fn tcp_memory_kib() -> Option<u64> {
    let sockstat = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    parse_tcp_pages(&sockstat).map(|pages| pages * 4)
}

fn parse_tcp_pages(sockstat: &str) -> Option<u64> {
    let line = sockstat.lines().find(|l| l.starts_with("TCP:"))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == "mem")?;
    words.next()?.parse().ok()
}

/// How many connections the host's listen queues have dropped since boot
/// (`TcpExt: ListenOverflows` in `/proc/net/netstat`).
pub(crate) fn listen_overflows() -> Option<u64> {
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    parse_listen_overflows(&netstat)
}

fn parse_listen_overflows(netstat: &str) -> Option<u64> {
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let column = names
        .split_whitespace()
        .position(|name| name == "ListenOverflows")?;
    values.split_whitespace().nth(column)?.parse().ok()
}

/// The `i`-th address of the crowd: 127.0.1.1 … 127.0.1.250, 127.0.2.1, …
pub fn crowd_address(i: usize) -> Ipv4Addr {
    let i = u32::try_from(i).unwrap_or(u32::MAX).min(250 * 250 - 1);
    Ipv4Addr::new(127, 0, (1 + i / 250) as u8, (1 + i % 250) as u8)
}

/// A TCP connection to `server` from the loopback address `from`.
pub(super) async fn tcp_from(from: Ipv4Addr, server: SocketAddr) -> Result<TcpStream, String> {
    tcp_from_with(from, server, None).await
}

/// [`tcp_from`], with the socket's send buffer set to `send_buffer` bytes when given.
pub(super) async fn tcp_from_with(
    from: Ipv4Addr,
    server: SocketAddr,
    send_buffer: Option<u32>,
) -> Result<TcpStream, String> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    if let Some(bytes) = send_buffer {
        socket
            .set_send_buffer_size(bytes)
            .map_err(|e| format!("SO_SNDBUF: {e}"))?;
    }
    socket
        .bind(SocketAddr::new(IpAddr::V4(from), 0))
        .map_err(|e| format!("bind {from}: {e}"))?;
    socket
        .connect(server)
        .await
        .map_err(|e| format!("connect from {from}: {e}"))
}

/// A WebSocket from `from`, upgraded but not greeted. An upgrade answered 429 (the
/// address's HTTP rate) is tried again until `limit`.
pub(super) async fn open_ws(
    from: Ipv4Addr,
    target: &Target,
    limit: Instant,
) -> Result<Client, String> {
    loop {
        let stream = timeout_at(limit, tcp_from(from, target.addr))
            .await
            .map_err(|_| format!("connecting from {from} timed out"))??;
        match timeout_at(
            limit,
            Client::connect_on(stream, &target.ws_url(), Encoding::MsgPack),
        )
        .await
        {
            Err(_) => return Err(format!("upgrade from {from} timed out")),
            Ok(Ok(client)) => return Ok(client),
            Ok(Err(ClientError::Refused { status: 429 })) if Instant::now() < limit => {
                sleep(Duration::from_millis(250)).await;
            }
            Ok(Err(e)) => return Err(format!("upgrade from {from}: {e}")),
        }
    }
}

/// Sends a whole upgrade request from `from` and returns the answer's status and head.
pub(super) async fn raw_upgrade(
    from: Ipv4Addr,
    server: SocketAddr,
) -> Result<(u16, String), String> {
    let exchange = async {
        let mut stream = tcp_from(from, server).await?;
        let request = format!(
            "GET /ws HTTP/1.1\r\nHost: {server}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Protocol: jumpgate.v1.msgpack\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
            let n = stream.read(&mut byte).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!(
                    "closed before answering ({} bytes of head)",
                    head.len()
                ));
            }
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("no status in {head:?}"))?;
        Ok((status, head))
    };
    tokio::time::timeout(PATIENCE, exchange)
        .await
        .map_err(|_| "no answer to the upgrade".to_owned())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crowd_addresses_are_distinct_and_on_loopback() {
        assert_eq!(crowd_address(0), Ipv4Addr::new(127, 0, 1, 1));
        assert_eq!(crowd_address(249), Ipv4Addr::new(127, 0, 1, 250));
        assert_eq!(crowd_address(250), Ipv4Addr::new(127, 0, 2, 1));
        let all: std::collections::HashSet<_> = (0..18_000).map(crowd_address).collect();
        assert_eq!(all.len(), 18_000);
        assert!(all.iter().all(|ip| ip.is_loopback()));
    }

    #[test]
    fn reads_tcp_memory() {
        let sockstat = "sockets: used 143\nTCP: inuse 125 orphan 0 tw 25 alloc 125 mem 59284\n\
                        UDP: inuse 0 mem 0\n";
        assert_eq!(parse_tcp_pages(sockstat), Some(59284));
        assert_eq!(parse_tcp_pages("UDP: inuse 0 mem 3\n"), None);
    }

    #[test]
    fn reads_listen_overflows() {
        let netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\n\
                       TcpExt: 0 1252 1260\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(parse_listen_overflows(netstat), Some(1252));
        assert_eq!(parse_listen_overflows("IpExt: a\nIpExt: 1\n"), None);
    }
}
