//! HAProxy on loopback: the [`Balancer`] runs the repository's
//! `deploy/haproxy.cfg` with only its addresses changed, so the routing
//! under test (hashing by room code, retries, redispatch, health checks) is
//! the one deployed; the [`FrontProxy`] is a plain proxy in front of it, as
//! an Ingress or a cloud load balancer would be.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use crate::Endpoint;
use crate::http::http_get;
use crate::ports::{free_loopback_addr, free_port};
use crate::process::{Output, ProcessSpec, START_PATIENCE, ServerProcess};

/// How many instances the deployed configuration lists.
pub const SERVERS: usize = 3;

/// `deploy/haproxy.cfg` of this repository.
pub fn deployed_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/haproxy.cfg")
}

/// How to start a [`Balancer`].
#[derive(Debug, Clone)]
pub struct BalancerOptions {
    /// The `haproxy` binary.
    pub program: PathBuf,
    /// The deployed configuration to rewrite for loopback.
    pub config: PathBuf,
    /// Its `maxconn` (the deployed 20,000 need more file descriptors than a
    /// test may open).
    pub maxconn: usize,
}

impl Default for BalancerOptions {
    /// `haproxy` from `PATH`, [`deployed_config`], 4,000 connections.
    fn default() -> Self {
        BalancerOptions {
            program: PathBuf::from("haproxy"),
            config: deployed_config(),
            maxconn: 4000,
        }
    }
}

/// HAProxy in the foreground with the deployed configuration; killed on
/// drop, and its directory removed.
#[derive(Debug)]
pub struct Balancer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its statistics page (added to the configuration): which servers are up.
    stats: SocketAddr,
    /// Where each server of the configuration points, in order
    /// (`jumpgate1` first).
    pub servers: Vec<SocketAddr>,
    haproxy: Haproxy,
}

impl Balancer {
    /// Starts HAProxy with the default options, its servers at `servers`
    /// (in order; servers not given point at closed ports, so their checks
    /// fail and they stay out of the ring until something listens there).
    /// Returns once every given server is in the ring; panics if it cannot.
    pub async fn start(servers: &[SocketAddr]) -> Balancer {
        assert!(servers.len() <= SERVERS);
        let mut addrs: Vec<SocketAddr> = servers.to_vec();
        while addrs.len() < SERVERS {
            addrs.push(free_loopback_addr());
        }
        let balancer = Self::launch(&BalancerOptions::default(), &addrs)
            .await
            .unwrap_or_else(|e| panic!("{e} (the test command installs haproxy)"));
        let up: Vec<bool> = (0..SERVERS).map(|i| i < servers.len()).collect();
        balancer.wait_for_ring(&up).await;
        balancer
    }

    /// Starts HAProxy with the configuration of `options`, server
    /// `jumpgateN` at `servers[N-1]` (servers beyond them left out), and
    /// waits until every one of `servers` is in the ring.
    pub async fn start_with(
        options: &BalancerOptions,
        servers: &[SocketAddr],
    ) -> Result<Balancer, String> {
        let balancer = Self::launch(options, servers).await?;
        let up: Vec<bool> = (0..SERVERS).map(|i| i < servers.len()).collect();
        balancer.try_wait_for_ring(&up).await?;
        Ok(balancer)
    }

    async fn launch(options: &BalancerOptions, servers: &[SocketAddr]) -> Result<Balancer, String> {
        let text = std::fs::read_to_string(&options.config)
            .map_err(|e| format!("cannot read {}: {e}", options.config.display()))?;
        let port = free_port();
        let stats_port = free_port();
        let mut config = loopback_config(&text, port, servers, options.maxconn)?;
        config.push_str(&format!(
            "\nfrontend stats\n    bind 127.0.0.1:{stats_port}\n    stats enable\n    stats uri /stats\n"
        ));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let haproxy = Haproxy::start(&options.program, "haproxy", addr, &config).await?;
        Ok(Balancer {
            addr,
            stats: SocketAddr::from(([127, 0, 0, 1], stats_port)),
            servers: servers.to_vec(),
            haproxy,
        })
    }

    /// Which servers HAProxy counts as up (in the ring), `jumpgate1` first.
    pub async fn ring(&self) -> Option<Vec<bool>> {
        let answer = http_get(self.stats, "/stats;csv").await?;
        if answer.status != 200 {
            return None;
        }
        let mut up = vec![false; SERVERS];
        for line in answer.body.lines() {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() > 17
                && fields[0] == "jumpgate"
                && let Some(n) = fields[1]
                    .strip_prefix("jumpgate")
                    .and_then(|n| n.parse::<usize>().ok())
                && (1..=SERVERS).contains(&n)
            {
                up[n - 1] = fields[17].starts_with("UP");
            }
        }
        Some(up)
    }

    /// Waits until exactly the servers marked `true` are in the ring (each
    /// change takes HAProxy two checks a second apart); panics if they
    /// never are.
    pub async fn wait_for_ring(&self, up: &[bool]) {
        self.try_wait_for_ring(up)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// [`wait_for_ring`](Self::wait_for_ring), an error instead of a panic.
    pub async fn try_wait_for_ring(&self, up: &[bool]) -> Result<(), String> {
        let limit = START_PATIENCE + Duration::from_secs(5);
        let give_up = Instant::now() + limit;
        loop {
            let ring = self.ring().await;
            if ring.as_deref() == Some(up) {
                return Ok(());
            }
            if Instant::now() >= give_up {
                return Err(format!(
                    "HAProxy's ring never became {up:?} within {limit:?} (last {ring:?}): {}",
                    self.output_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server HAProxy sends a request naming `room` to (its
    /// `X-Jumpgate-Server` header on a plain GET, which the server refuses
    /// as no WebSocket upgrade, so nothing moves), or round robin's pick of
    /// a ready server without a room.
    pub async fn server_for(&self, room: Option<&str>) -> Option<String> {
        let path = match room {
            Some(room) => format!("/ws?room={room}"),
            None => "/readyz".to_owned(),
        };
        let answer = http_get(self.addr, &path).await?;
        (answer.status != 503 || room.is_some())
            .then(|| answer.header("x-jumpgate-server").map(str::to_owned))
            .flatten()
    }

    /// The WebSocket URL, naming a lobby or solo game when given (HAProxy
    /// hashes it).
    pub fn ws_url(&self, room: Option<&str>) -> String {
        match room {
            Some(room) => format!("ws://{}/ws?room={room}", self.addr),
            None => format!("ws://{}/ws", self.addr),
        }
    }

    /// [`ws_url`](Self::ws_url) as an [`Endpoint`].
    pub fn ws(&self, room: Option<&str>) -> Via {
        Via(self.ws_url(room))
    }

    /// The last lines HAProxy wrote.
    pub fn output_tail(&self) -> String {
        self.haproxy.process.output_tail()
    }

    /// Kills HAProxy and removes its directory.
    pub fn stop(self) {}
}

/// A WebSocket URL through a balancer.
#[derive(Debug, Clone)]
pub struct Via(pub String);

impl Endpoint for Via {
    fn ws(&self) -> String {
        self.0.clone()
    }
}

/// A plain HAProxy in front of another proxy, as an Ingress or a cloud
/// load balancer stands in front of the deployment's balancer: it appends
/// the address it was reached from to `X-Forwarded-For` and connects on
/// from `source`, a loopback address of its own. Killed on drop.
#[derive(Debug)]
pub struct FrontProxy {
    /// Where it listens.
    pub addr: SocketAddr,
    _haproxy: Haproxy,
}

impl FrontProxy {
    /// Starts it in front of `to`; returns once it answers. Panics if it
    /// cannot.
    pub async fn start(to: SocketAddr, source: Ipv4Addr) -> FrontProxy {
        let addr = free_loopback_addr();
        let config = format!(
            "global\n    maxconn 1000\n\
             defaults\n    mode http\n    option forwardfor\n    timeout connect 5s\n\
             \x20   timeout client 60s\n    timeout server 60s\n    timeout tunnel 1h\n\
             frontend front\n    bind {addr}\n    default_backend next\n\
             backend next\n    server next {to} source {source}\n"
        );
        let mut haproxy = Haproxy::start(Path::new("haproxy"), "front", addr, &config)
            .await
            .unwrap_or_else(|e| panic!("{e} (the test command installs haproxy)"));
        haproxy
            .process
            .wait_ready("answer /healthz", |addr| async move {
                http_get(addr, "/healthz").await.is_some()
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        FrontProxy {
            addr,
            _haproxy: haproxy,
        }
    }
}

/// An HAProxy process in the foreground, its configuration in a directory
/// of its own; killed and the directory removed on drop.
#[derive(Debug)]
struct Haproxy {
    dir: PathBuf,
    process: ServerProcess,
}

impl Haproxy {
    /// Writes `config` to a fresh directory and starts `program` on it;
    /// returns once `addr` accepts connections.
    async fn start(
        program: &Path,
        name: &str,
        addr: SocketAddr,
        config: &str,
    ) -> Result<Haproxy, String> {
        let dir = std::env::temp_dir().join(format!(
            "jumpgate-{name}-{}-{}",
            std::process::id(),
            addr.port()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config)
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        let args = vec![
            "-db".to_owned(),
            "-f".to_owned(),
            file.to_string_lossy().into_owned(),
        ];
        let spec = ProcessSpec {
            name,
            program,
            args: &args,
            envs: &[],
            cpus: None,
            output: Output::Capture,
        };
        // Made before the start so the directory goes also if it fails.
        let cleanup = RemoveOnDrop(dir);
        let process = ServerProcess::start(&spec, addr).await?;
        Ok(Haproxy {
            dir: cleanup.take(),
            process,
        })
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        self.process.kill_9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes a directory when dropped, unless [taken](Self::take).
struct RemoveOnDrop(PathBuf);

impl RemoveOnDrop {
    fn take(mut self) -> PathBuf {
        std::mem::take(&mut self.0)
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `deploy/haproxy.cfg` for loopback: it binds `127.0.0.1:port`, server
/// `jumpgateN` is at `servers[N-1]` (servers beyond them are left out),
/// without Docker's DNS resolver, and with `maxconn` connections.
/// Everything else is as deployed. An error if the file no longer has what
/// is replaced.
pub fn loopback_config(
    deployed: &str,
    port: u16,
    servers: &[SocketAddr],
    maxconn: usize,
) -> Result<String, String> {
    if servers.is_empty() || servers.len() > SERVERS {
        return Err(format!(
            "the deployed configuration has {SERVERS} servers; use 1 to {SERVERS}"
        ));
    }
    let mut out = String::new();
    let mut in_resolvers = false;
    for line in deployed.lines() {
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
        let unused_server = (servers.len() + 1..=SERVERS).any(|n| {
            line.trim_start()
                .starts_with(&format!("server jumpgate{n} "))
        });
        if unused_server {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    let mut replacements = vec![
        ("bind :8080".to_owned(), format!("bind 127.0.0.1:{port}")),
        ("maxconn 20000".to_owned(), format!("maxconn {maxconn}")),
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
        if !out.contains(&from) {
            return Err(format!(
                "deploy/haproxy.cfg no longer has {from:?}; update harness/src/haproxy.rs"
            ));
        }
        out = out.replace(&from, &to);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_the_deployed_balancer_for_loopback() {
        let deployed = include_str!("../../deploy/haproxy.cfg");
        let servers: Vec<SocketAddr> = vec![
            "127.0.0.1:4001".parse().unwrap(),
            "127.0.0.1:4002".parse().unwrap(),
        ];
        let config = loopback_config(deployed, 4000, &servers, 5000).unwrap();
        assert!(config.contains("bind 127.0.0.1:4000"));
        assert!(config.contains("server jumpgate1 127.0.0.1:4001 id 1"));
        assert!(config.contains("server jumpgate2 127.0.0.1:4002 id 2"));
        assert!(!config.contains("jumpgate3"));
        assert!(!config.contains("resolvers"));
        assert!(config.contains("maxconn 5000"));
        assert!(config.contains("hash-type consistent"));
        assert!(loopback_config(deployed, 4000, &[], 5000).is_err());
    }
}
