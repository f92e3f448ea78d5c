//! A Redis Cluster of our own: three (or more) masters and no replicas on
//! free loopback ports, each `redis-server --cluster-enabled yes` in a
//! scratch directory, joined by `redis-cli --cluster create`, and waited
//! for until every node reports `cluster_state:ok` and knows every other.

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use crate::ports::free_port;
use crate::redis::{RedisOptions, RedisServer};

/// How long `redis-cli --cluster create` and the nodes' agreement may take.
const CLUSTER_PATIENCE: Duration = Duration::from_secs(30);

/// How to start a [`RedisCluster`].
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// How many masters (3 to 9).
    pub masters: usize,
    /// How each node is started.
    pub node: RedisOptions,
    /// The `redis-cli` binary.
    pub redis_cli: PathBuf,
}

impl Default for ClusterOptions {
    /// Three masters with the tests' node options, `redis-cli` from `PATH`.
    fn default() -> Self {
        ClusterOptions {
            masters: 3,
            node: RedisOptions::default(),
            redis_cli: PathBuf::from("redis-cli"),
        }
    }
}

/// A running Redis Cluster of masters only; every node killed on drop.
#[derive(Debug)]
pub struct RedisCluster {
    /// The nodes, in the order they were started.
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts one with the default options; panics if it cannot.
    pub async fn start() -> RedisCluster {
        Self::start_with(&ClusterOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e} (the test command installs redis-server)"))
    }

    /// Starts the nodes and creates the cluster.
    pub async fn start_with(options: &ClusterOptions) -> Result<RedisCluster, String> {
        if !(3..=9).contains(&options.masters) {
            return Err("a Redis Cluster needs 3 to 9 masters here".into());
        }
        let mut nodes = Vec::with_capacity(options.masters);
        for _ in 0..options.masters {
            let bus = free_port();
            let extra = [
                "--cluster-enabled",
                "yes",
                "--cluster-port",
                &bus.to_string(),
                "--cluster-config-file",
                "nodes.conf",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            nodes.push(RedisServer::start_prepared(&options.node, extra, |_| Ok(())).await?);
        }
        let cluster = RedisCluster { nodes };
        let addrs: Vec<String> = cluster.nodes.iter().map(|n| n.addr().to_string()).collect();
        let create = tokio::process::Command::new(&options.redis_cli)
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(CLUSTER_PATIENCE, create)
            .await
            .map_err(|_| format!("redis-cli --cluster create took more than {CLUSTER_PATIENCE:?}"))?
            .map_err(|e| format!("cannot run {}: {e}", options.redis_cli.display()))?;
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

    /// Waits until every node reports `cluster_state:ok` and knows every
    /// node (a node may say ok before it has met the others).
    async fn wait_ok(&self) -> Result<(), String> {
        let give_up = Instant::now() + CLUSTER_PATIENCE;
        let known = format!("cluster_known_nodes:{}", self.nodes.len());
        'wait: loop {
            for node in &self.nodes {
                let info = node.try_command(&["CLUSTER", "INFO"]).await?;
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
            .map(|n| format!("redis://{}", n.addr()))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every running node's process id.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(RedisServer::pid).collect()
    }

    /// Stalls every node (`CLIENT PAUSE ms ALL` on each).
    pub async fn pause(&self, ms: u64) {
        for node in &self.nodes {
            node.pause(ms).await;
        }
    }

    /// Kills every node and removes their directories.
    pub fn stop(self) {}
}
