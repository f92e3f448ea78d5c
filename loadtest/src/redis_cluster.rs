//! A Redis Cluster of our own for the benchmarks: three (or more) masters on free
//! loopback ports, each `redis-server --cluster-enabled yes` in a scratch directory,
//! joined by `redis-cli --cluster create … --cluster-replicas 0`, and waited for until
//! every node reports `cluster_state:ok`. Every node is killed when dropped and the
//! directories removed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use crate::net;
use crate::procs::Spawned;

/// How long `redis-cli --cluster create` and the cluster's agreement may take.
const PATIENCE: Duration = Duration::from_secs(30);

/// A running Redis Cluster of masters only.
#[derive(Debug)]
pub struct RedisCluster {
    /// The nodes, in the order they were started.
    nodes: Vec<Spawned>,
    dirs: Vec<PathBuf>,
}

impl RedisCluster {
    /// Starts `masters` nodes of `program` (append-only file with fsync every second
    /// when `append_only`, nothing saved otherwise), under `taskset -c cpus` when
    /// given, and creates the cluster with `redis_cli`.
    pub async fn start(
        program: &Path,
        redis_cli: &Path,
        masters: usize,
        append_only: bool,
        cpus: Option<&str>,
    ) -> Result<RedisCluster, String> {
        if !(3..=9).contains(&masters) {
            return Err("a Redis Cluster needs 3 to 9 masters here".into());
        }
        let mut cluster = RedisCluster {
            nodes: Vec::with_capacity(masters),
            dirs: Vec::with_capacity(masters),
        };
        for n in 1..=masters {
            let addr = net::free_loopback_addr().map_err(|e| e.to_string())?;
            let bus = net::free_loopback_addr().map_err(|e| e.to_string())?;
            let dir = std::env::temp_dir().join(format!(
                "jumpgate-loadtest-rcluster-{}-{}",
                std::process::id(),
                addr.port()
            ));
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            cluster.dirs.push(dir.clone());
            let args: Vec<String> = [
                "--bind",
                "127.0.0.1",
                "--port",
                &addr.port().to_string(),
                "--cluster-enabled",
                "yes",
                "--cluster-port",
                &bus.port().to_string(),
                "--cluster-config-file",
                "nodes.conf",
                "--save",
                "",
                "--appendonly",
                if append_only { "yes" } else { "no" },
                "--dir",
                &dir.to_string_lossy(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let name = format!("redis cluster node {n}");
            let node = Spawned::start(&name, program, &args, &[], cpus, addr).await?;
            cluster.nodes.push(node);
        }
        let addrs: Vec<String> = cluster.nodes.iter().map(|n| n.addr.to_string()).collect();
        let create = tokio::process::Command::new(redis_cli)
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(PATIENCE, create)
            .await
            .map_err(|_| format!("redis-cli --cluster create took more than {PATIENCE:?}"))?
            .map_err(|e| format!("cannot run {}: {e}", redis_cli.display()))?;
        if !output.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stdout)
                    .lines()
                    .chain(String::from_utf8_lossy(&output.stderr).lines())
                    .last()
                    .unwrap_or("")
            ));
        }
        cluster.wait_ok().await?;
        Ok(cluster)
    }

    /// Waits until every node reports `cluster_state:ok` and knows every node.
    async fn wait_ok(&self) -> Result<(), String> {
        let give_up = Instant::now() + PATIENCE;
        let mut conns = Vec::new();
        for node in &self.nodes {
            let client = redis::Client::open(format!("redis://{}/", node.addr))
                .map_err(|e| format!("Redis: {e}"))?;
            let conn = client
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| format!("Redis node {}: {e}", node.addr))?;
            conns.push(conn);
        }
        let known = format!("cluster_known_nodes:{}", self.nodes.len());
        'wait: loop {
            for conn in &mut conns {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query_async(conn)
                    .await
                    .map_err(|e| format!("CLUSTER INFO: {e}"))?;
                if !(info.contains("cluster_state:ok") && info.contains(&known)) {
                    if Instant::now() >= give_up {
                        return Err(format!("the cluster did not come up: {info}"));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue 'wait;
                }
            }
            return Ok(());
        }
    }

    /// The server's `--redis-url` for this cluster: every node as a seed.
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("redis://{}", n.addr))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every node's process id.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(|n| n.pid).collect()
    }

    /// Stops every node and removes their directories.
    pub async fn stop(mut self) {
        for node in &mut self.nodes {
            node.halt().await;
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        // Killed first (each on its own drop), then their files removed.
        self.nodes.clear();
        for dir in &self.dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
