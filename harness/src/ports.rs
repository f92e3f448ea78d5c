//! Free loopback ports for servers started later.

use std::net::SocketAddr;

/// A free loopback port for a server started later (bound and released).
///
/// Taken below Linux's ephemeral range (32768+), so that a client
/// connection made in the meantime cannot be given the same port, and from
/// an offset per process so that test binaries running side by side rarely
/// try the same one. (The kernel's pick for port 0 is in the ephemeral
/// range, where an outgoing connection may take it before the server
/// binds it.)
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 600) as u16 * 20;
    loop {
        let port = base + NEXT.fetch_add(1, Ordering::Relaxed) % 12_000;
        let port = if port >= 32_000 { port - 12_000 } else { port };
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// `127.0.0.1:` a [`free_port`].
pub fn free_loopback_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], free_port()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_and_differ() {
        let a = free_port();
        let b = free_port();
        assert_ne!(a, b);
        for port in [a, b] {
            assert!((20_000..32_000).contains(&port), "{port}");
        }
        assert!(free_loopback_addr().ip().is_loopback());
    }
}
