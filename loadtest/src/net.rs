//! Loopback checks and reading a process's resident memory and CPU time; free ports
//! and the plain HTTP GET (for `/healthz` and the servers' `/metrics`) are the
//! harness's, re-exported.

use std::net::{IpAddr, SocketAddr};

pub use jumpgate_harness::free_loopback_addr;
pub use jumpgate_harness::http::{HttpAnswer, http_get};

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

/// The resident set size of process `pid` in KiB, from `/proc/PID/status` (`VmRSS`).
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss(&status)
}

/// CPU time process `pid` has used so far, all threads, user and system (from
/// `/proc/PID/stat`, in the kernel's USER_HZ ticks of 10 ms).
pub fn cpu_time(pid: u32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat).map(|ticks| std::time::Duration::from_millis(ticks * 10))
}

fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    // The command name may hold spaces and parentheses: fields count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
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
    fn reads_cpu_ticks() {
        let stat = "4242 (jump gate) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 31 0 0 20 0 9";
        assert_eq!(parse_cpu_ticks(stat), Some(281));
    }

    #[test]
    fn reads_vm_rss() {
        let status = "Name:\tjumpgate\nVmPeak:\t  9000 kB\nVmRSS:\t   12345 kB\n";
        assert_eq!(parse_vm_rss(status), Some(12345));
        assert_eq!(parse_vm_rss("Name: x\n"), None);
    }
}
