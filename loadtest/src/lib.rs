//! Jumpgate load tester: drives real protocol clients against a Jumpgate server and a
//! bare WebSocket echo server in the same run, and reports the two side by side.
//!
//! The binary (`jumpgate-loadtest`) has these subcommands: `bench`, which spawns both
//! servers and runs every phase ([`bench`]), `bench-bots`, which measures human move
//! latency with and without solo games against the computer ([`bots`]), and
//! `echo-server` ([`echo`]). The phases themselves live in [`driver`] and take plain
//! URLs, so tests can run them against servers they started.
//!
//! Two more measure ownership across instances, on a [`cluster`] of instances
//! sharing one Redis: `failover` ([`failover`]: how long the rooms of a killed instance
//! take to be playable again) and `ownership-cost` ([`ownership_cost`]: Redis commands
//! spent on ownership while rooms sit idle). Their players are [`seated`] lobbies on
//! the SDK's reconnecting sessions.
//!
//! `leaderboard` ([`leaderboard`]) times a page of the public leaderboard at growing
//! board sizes, the players written straight into Redis.
//! `edge` ([`edge`]) measures the server's edge under abuse: connections held at the
//! cap, half-open and un-greeted connections left to their deadlines, and an innocent
//! game while one address floods.
//! `dormant` ([`dormant`]) measures what idle correspondence lobbies cost once the
//! server has unloaded them to Redis, and how long loading one takes on a join.
//! `bench-cluster` ([`bench_cluster`]) runs `bench`'s saturation phase on a server
//! backed by a Redis Cluster of three masters and on one backed by one Redis.
//! `data-file` ([`data_file`]) measures the embedded store's data file: its size
//! after many finished games and the restart time with many lobbies in it.
//!
//! The processes they start (Redis, Redis Cluster, HAProxy, servers) come from the
//! shared harness crate, `jumpgate-harness`.

pub mod allocs;
pub mod bench;
pub mod bench_cluster;
pub mod bots;
pub mod cluster;
pub mod cpu;
pub mod crowd;
pub mod data_file;
pub mod dormant;
pub mod driver;
pub mod echo;
pub mod edge;
pub mod failover;
pub mod leaderboard;
pub mod net;
pub mod ownership_cost;
pub mod report;
pub mod seated;
pub mod solo_wait;
pub mod svg;
