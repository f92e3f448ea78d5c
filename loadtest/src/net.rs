//! Loopback checks, free ports and reading a process's resident memory.

use std::net::{IpAddr, SocketAddr};

use tokio_tungstenite::tungstenite::http::Uri;

/// Refuses any WebSocket URL that is not `ws://` on a loopback host.
pub fn require_loopback_url(url: &str) -> Result<(), String> {
    let uri: Uri = url.parse().map_err(|e| format!("bad URL {url}: {e}"))?;
    if uri.scheme_str() != Some("ws") {
        return Err(format!("{url}: only ws:// URLs are supported"));
    }
    let host = uri
        .host()
        .ok_or_else(|| format!("{url}: the URL has no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(())
    } else {
        Err(format!(
            "refusing non-loopback target {url}: the load tester only runs against \
             127.0.0.1, ::1 or localhost"
        ))
    }
}

/// Refuses a listening address that is not on loopback.
pub fn require_loopback_addr(addr: SocketAddr) -> Result<(), String> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(format!(
            "refusing to listen on {addr}: the load tester stays on loopback"
        ))
    }
}

/// A loopback port that was free a moment ago (the kernel picks it).
pub fn free_loopback_addr() -> std::io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.local_addr()
}

/// The resident set size of process `pid` in KiB, from `/proc/PID/status` (`VmRSS`).
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss(&status)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_only() {
        assert!(require_loopback_url("ws://127.0.0.1:8080/ws").is_ok());
        assert!(require_loopback_url("ws://localhost:8080/ws").is_ok());
        assert!(require_loopback_url("ws://[::1]:8080/ws").is_ok());
        assert!(require_loopback_url("ws://10.0.0.1:8080/ws").is_err());
        assert!(require_loopback_url("ws://example.com/ws").is_err());
        assert!(require_loopback_url("wss://127.0.0.1/ws").is_err());
    }

    #[test]
    fn reads_vm_rss() {
        let status = "Name:\tjumpgate\nVmPeak:\t  9000 kB\nVmRSS:\t   12345 kB\n";
        assert_eq!(parse_vm_rss(status), Some(12345));
        assert_eq!(parse_vm_rss("Name: x\n"), None);
    }
}
