//! A TCP proxy on loopback that holds every byte for a fixed time in each
//! direction: a network's round trip between a server and its Redis, with
//! both on this machine. Order is kept and nothing is lost; only latency is
//! added (no bandwidth limit), which is what a round-trip-bound start feels.
//!
//! It runs on threads of its own with the operating system's sleep, not on
//! tokio: tokio's timer ticks by the millisecond, which would turn half a
//! millisecond into one or two.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running proxy; stops accepting when dropped (connections made go on
/// until either side closes).
#[derive(Debug)]
pub struct DelayProxy {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl DelayProxy {
    /// Listens on a free loopback port and forwards every connection to
    /// `upstream`, each way `one_way` late (so a round trip takes twice that
    /// longer).
    pub async fn start(upstream: SocketAddr, one_way: Duration) -> Result<DelayProxy, String> {
        crate::net::require_loopback_addr(upstream)?;
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("delay proxy: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("delay proxy: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        if let Ok(server) = TcpStream::connect(upstream) {
                            forward(client, server, one_way);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(DelayProxy { addr, stop })
    }
}

/// Pumps both directions of one connection.
fn forward(client: TcpStream, server: TcpStream, delay: Duration) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(client_out), Ok(server_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    pump(client, server_out, delay);
    pump(server, client_out, delay);
}

/// Copies `from` to `to` on two threads, each chunk written `delay` after
/// it was read; closes `to` for writing once `from` ends.
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    std::thread::spawn(move || {
        while let Ok((due, chunk)) = rx.recv() {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bytes_pass_through_both_ways_in_order() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = echo.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut socket, _) = echo.accept().unwrap();
            let mut buf = [0u8; 16];
            while let Ok(n) = socket.read(&mut buf) {
                if n == 0 || socket.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
        let proxy = DelayProxy::start(upstream, Duration::from_millis(20))
            .await
            .unwrap();
        let answer = tokio::task::spawn_blocking(move || {
            let mut client = TcpStream::connect(proxy.addr).unwrap();
            for word in [&b"ping"[..], b"pong", b"last"] {
                client.write_all(word).unwrap();
            }
            let mut answer = [0u8; 12];
            client.read_exact(&mut answer).unwrap();
            answer
        })
        .await
        .unwrap();
        assert_eq!(&answer, b"pingponglast");
    }
}
