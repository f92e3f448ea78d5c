//! The connection every Redis-backed part of the server shares: one Redis
//! (a `ConnectionManager`, which reconnects by itself) or a Redis Cluster
//! (the cluster client, which follows the slot map and its changes), chosen
//! by the URL, both connecting lazily on the first command and timing out
//! every command.
//!
//! `--redis-url redis://host:6379` is one Redis. A comma-separated list of
//! seed nodes (`redis://a:7000,redis://b:7001`), or one seed written
//! `redis+cluster://a:7000`, is a Redis Cluster. Every command and script
//! the server sends names keys of one hash slot (see ARCHITECTURE.md,
//! "Redis Cluster"), so both behave the same.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::OnceCell;

use super::StoreError;

/// A connection to one Redis or to a Redis Cluster; cheap to clone.
#[derive(Clone)]
pub enum RedisConn {
    Single(ConnectionManager),
    Cluster(Arc<LazyCluster>),
}

impl std::fmt::Debug for RedisConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RedisConn::Single(_) => "RedisConn::Single",
            RedisConn::Cluster(_) => "RedisConn::Cluster",
        })
    }
}

/// A cluster connection made on first use (so a server starts while the
/// cluster is still away), then shared.
pub struct LazyCluster {
    client: redis::cluster::ClusterClient,
    conn: OnceCell<ClusterConnection>,
}

impl std::fmt::Debug for LazyCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LazyCluster { .. }")
    }
}

impl LazyCluster {
    async fn get(&self) -> redis::RedisResult<ClusterConnection> {
        self.conn
            .get_or_try_init(|| self.client.get_async_connection())
            .await
            .cloned()
    }
}

/// The seed nodes of a Redis Cluster URL, or `None` for one Redis.
pub fn cluster_seeds(url: &str) -> Option<Vec<String>> {
    if let Some(seed) = url.strip_prefix("redis+cluster://") {
        return Some(vec![format!("redis://{seed}")]);
    }
    url.contains(',').then(|| {
        url.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    })
}

/// The URL of one node (the first seed of a cluster), for the pub/sub
/// subscription: a cluster passes every published message to every node.
pub fn first_node(url: &str) -> String {
    cluster_seeds(url)
        .and_then(|seeds| seeds.into_iter().next())
        .unwrap_or_else(|| url.to_owned())
}

/// A connection for `url` (one Redis, or a cluster's seeds) whose commands
/// time out after `timeout`.
pub fn redis_connection(url: &str, timeout: Duration) -> Result<RedisConn, StoreError> {
    if let Some(seeds) = cluster_seeds(url) {
        let client = redis::cluster::ClusterClientBuilder::new(seeds)
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .retries(1)
            .build()
            .map_err(StoreError::from)?;
        return Ok(RedisConn::Cluster(Arc::new(LazyCluster {
            client,
            conn: OnceCell::new(),
        })));
    }
    let client = redis::Client::open(url).map_err(StoreError::from)?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(500));
    ConnectionManager::new_lazy_with_config(client, config)
        .map(RedisConn::Single)
        .map_err(StoreError::from)
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisConn::Single(conn) => conn.req_packed_command(cmd),
            RedisConn::Cluster(lazy) => {
                let lazy = lazy.clone();
                Box::pin(async move { lazy.get().await?.req_packed_command(cmd).await })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisConn::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            RedisConn::Cluster(lazy) => {
                let lazy = lazy.clone();
                Box::pin(async move {
                    lazy.get()
                        .await?
                        .req_packed_commands(pipeline, offset, count)
                        .await
                })
            }
        }
    }

    fn get_db(&self) -> i64 {
        0
    }
}

impl RedisConn {
    /// Sends groups of commands, each naming keys of one hash slot only
    /// (`slot_key` is one of them), in as few round trips as the connection
    /// allows: to one Redis, all of them as one pipeline; to a cluster, one
    /// pipeline per slot, all sent at once (the cluster client refuses a
    /// pipeline whose keys span slots, and a room's keys are a slot of
    /// their own). Returns each group's replies in order, a command's
    /// error among them as `Value::ServerError`; a group whose pipeline
    /// failed as a whole (a timeout, a lost connection) gets that error.
    pub async fn query_per_slot(
        &self,
        groups: &[(String, Vec<Cmd>)],
    ) -> Vec<redis::RedisResult<Vec<Value>>> {
        match self {
            RedisConn::Single(_) => {
                let all: Vec<&(String, Vec<Cmd>)> = groups.iter().collect();
                self.query_together(&all).await
            }
            RedisConn::Cluster(_) => {
                let mut slots: std::collections::HashMap<redis::cluster_routing::Slot, Vec<usize>> =
                    std::collections::HashMap::new();
                for (i, (key, _)) in groups.iter().enumerate() {
                    slots
                        .entry(redis::cluster_routing::Slot::for_key(key))
                        .or_default()
                        .push(i);
                }
                let sends = slots.into_values().map(|members| async move {
                    let mine: Vec<&(String, Vec<Cmd>)> =
                        members.iter().map(|&i| &groups[i]).collect();
                    (members, self.query_together(&mine).await)
                });
                let mut replies: Vec<Option<redis::RedisResult<Vec<Value>>>> =
                    (0..groups.len()).map(|_| None).collect();
                for (members, answers) in futures_util::future::join_all(sends).await {
                    for (i, answer) in members.into_iter().zip(answers) {
                        replies[i] = Some(answer);
                    }
                }
                replies.into_iter().flatten().collect()
            }
        }
    }

    /// The groups as one pipeline, its replies split back by group.
    async fn query_together(
        &self,
        groups: &[&(String, Vec<Cmd>)],
    ) -> Vec<redis::RedisResult<Vec<Value>>> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for (_, cmds) in groups {
            for cmd in cmds {
                pipe.add_command(cmd.clone());
            }
        }
        match pipe.query_async::<Vec<Value>>(&mut self.clone()).await {
            Ok(values) => {
                let mut values = values.into_iter();
                groups
                    .iter()
                    .map(|(_, cmds)| Ok(values.by_ref().take(cmds.len()).collect()))
                    .collect()
            }
            Err(e) => groups.iter().map(|_| Err(e.clone())).collect(),
        }
    }
}
