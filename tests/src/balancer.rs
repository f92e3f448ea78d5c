//! HAProxy running `deploy/haproxy.cfg` on loopback, in front of test
//! instances: only the addresses change, so the routing under test is the
//! one deployed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Endpoint, PATIENCE, free_port};

/// How many instances the deployed configuration lists.
pub const SERVERS: usize = 3;

/// HAProxy in the foreground; killed on drop.
#[derive(Debug)]
pub struct Balancer {
    pub addr: SocketAddr,
    /// HAProxy's statistics page (added for the tests): which servers are up.
    stats: SocketAddr,
    /// Where each server of the configuration points, in order
    /// (`jumpgate1` first).
    pub servers: Vec<SocketAddr>,
    _haproxy: Haproxy,
}

impl Balancer {
    /// Starts HAProxy with the deployment's configuration, its servers at
    /// `servers` (in order; servers not given point at closed ports, so
    /// their checks fail and they stay out of the ring until something
    /// listens there). Returns once every given server is in the ring.
    pub async fn start(servers: &[SocketAddr]) -> Balancer {
        assert!(servers.len() <= SERVERS);
        let mut addrs: Vec<SocketAddr> = servers.to_vec();
        while addrs.len() < SERVERS {
            addrs.push(format!("127.0.0.1:{}", free_port()).parse().unwrap());
        }
        let deployed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/haproxy.cfg");
        let config = std::fs::read_to_string(&deployed).unwrap();
        let port = free_port();
        let stats_port = free_port();
        let mut config = local_config(&config, port, &addrs);
        config.push_str(&format!(
            "\nfrontend stats\n    bind 127.0.0.1:{stats_port}\n    stats enable\n    stats uri /stats\n"
        ));
        let balancer = Balancer {
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
            stats: format!("127.0.0.1:{stats_port}").parse().unwrap(),
            servers: addrs,
            _haproxy: Haproxy::spawn("haproxy", port, &config),
        };
        let up: Vec<bool> = (0..SERVERS).map(|i| i < servers.len()).collect();
        balancer.wait_for_ring(&up).await;
        balancer
    }

    /// Which servers HAProxy counts as up (in the ring), `jumpgate1` first.
    pub async fn ring(&self) -> Option<Vec<bool>> {
        let (status, _, body) = http_request(self.stats, "/stats;csv").await?;
        if status != 200 {
            return None;
        }
        let mut up = vec![false; SERVERS];
        for line in body.lines() {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() > 17
                && fields[0] == "jumpgate"
                && let Some(n) = fields[1]
                    .strip_prefix("jumpgate")
                    .and_then(|n| n.parse::<usize>().ok())
            {
                up[n - 1] = fields[17].starts_with("UP");
            }
        }
        Some(up)
    }

    /// Waits until exactly the servers marked `true` are in the ring (each
    /// change takes HAProxy two checks a second apart).
    pub async fn wait_for_ring(&self, up: &[bool]) {
        let deadline = tokio::time::Instant::now() + PATIENCE * 2;
        loop {
            let ring = self.ring().await;
            if ring.as_deref() == Some(up) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the ring never became {up:?} (last {ring:?})"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server HAProxy sends a request naming `room` to (its
    /// `X-Jumpgate-Server` header), or round robin's pick without a room.
    pub async fn server_for(&self, room: Option<&str>) -> Option<String> {
        let path = match room {
            Some(room) => format!("/ws?room={room}"),
            None => "/readyz".to_owned(),
        };
        let (status, head, _) = http_request(self.addr, &path).await?;
        (status != 503 || room.is_some())
            .then(|| header(&head, "x-jumpgate-server"))
            .flatten()
    }

    /// The WebSocket address, naming a lobby or solo game when given.
    pub fn ws(&self, room: Option<&str>) -> Via {
        Via(match room {
            Some(room) => format!("ws://{}/ws?room={room}", self.addr),
            None => format!("ws://{}/ws", self.addr),
        })
    }
}

/// An HAProxy process in the foreground, its configuration in a
/// directory of its own; killed and cleaned up on drop.
#[derive(Debug)]
struct Haproxy {
    dir: PathBuf,
    child: std::process::Child,
}

impl Haproxy {
    /// Writes `config` to a fresh directory named after `name` and `port`
    /// and starts HAProxy on it.
    fn spawn(name: &str, port: u16, config: &str) -> Haproxy {
        let dir =
            std::env::temp_dir().join(format!("jumpgate-{name}-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let child = std::process::Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("haproxy is installed (the test command installs it)");
        Haproxy { dir, child }
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A plain HAProxy in front of another proxy, as an Ingress or a cloud
/// load balancer stands in front of the deployment's balancer: it appends
/// the address it was reached from to `X-Forwarded-For` and connects on
/// from `source`, a loopback address of its own. Killed on drop.
#[derive(Debug)]
pub struct FrontProxy {
    pub addr: SocketAddr,
    _haproxy: Haproxy,
}

impl FrontProxy {
    /// Starts it in front of `to`; returns once it answers.
    pub async fn start(to: SocketAddr, source: std::net::Ipv4Addr) -> FrontProxy {
        let port = free_port();
        let config = format!(
            "global\n    maxconn 1000\n\
             defaults\n    mode http\n    option forwardfor\n    timeout connect 5s\n\
             \x20   timeout client 60s\n    timeout server 60s\n    timeout tunnel 1h\n\
             frontend front\n    bind 127.0.0.1:{port}\n    default_backend next\n\
             backend next\n    server next {to} source {source}\n"
        );
        let proxy = FrontProxy {
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
            _haproxy: Haproxy::spawn("front", port, &config),
        };
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while http_request(proxy.addr, "/healthz").await.is_none() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the front proxy never answered"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        proxy
    }
}

/// A WebSocket URL through the balancer.
#[derive(Debug, Clone)]
pub struct Via(pub String);

impl Endpoint for Via {
    fn ws(&self) -> String {
        self.0.clone()
    }
}

/// A plain GET; the status, the response head (lower-cased) and the body.
/// `None` if nothing answers.
async fn http_request(addr: SocketAddr, path: &str) -> Option<(u16, String, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let head = head.to_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, head, body.to_owned()))
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_owned())
    })
}

/// `deploy/haproxy.cfg` with loopback addresses instead of compose's (the
/// bind port, the servers, no Docker DNS resolver) and fewer connections.
/// Fails loudly if the file no longer has what is replaced.
fn local_config(config: &str, port: u16, servers: &[SocketAddr]) -> String {
    let mut out = String::new();
    let mut in_resolvers = false;
    for line in config.lines() {
        if line.starts_with("resolvers ") {
            in_resolvers = true;
            continue;
        }
        if in_resolvers {
            if line.starts_with(' ') {
                continue;
            }
            in_resolvers = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    let mut replacements = vec![
        ("bind :8080".to_owned(), format!("bind 127.0.0.1:{port}")),
        // 20,000 connections need more file descriptors than a test may open.
        ("maxconn 20000".to_owned(), "maxconn 4000".to_owned()),
        (
            " resolvers docker init-addr last,libc,none".to_owned(),
            String::new(),
        ),
    ];
    for (i, addr) in servers.iter().enumerate() {
        let n = i + 1;
        replacements.push((
            format!("server jumpgate{n} jumpgate{n}:8080"),
            format!("server jumpgate{n} {addr}"),
        ));
    }
    for (from, to) in replacements {
        assert!(
            out.contains(&from),
            "deploy/haproxy.cfg no longer has {from:?}"
        );
        out = out.replace(&from, &to);
    }
    out
}
