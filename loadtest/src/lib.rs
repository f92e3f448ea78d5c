//! Jumpgate load tester: drives real protocol clients against a Jumpgate server and a
//! bare WebSocket echo server in the same run, and reports the two side by side.
//!
//! The binary (`jumpgate-loadtest`) has these subcommands: `bench`, which spawns both
//! servers and runs every phase ([`bench`]), `bench-bots`, which measures human move
//! latency with and without solo games against the computer ([`bots`]), and
//! `echo-server` ([`echo`]). The phases
//! themselves live in [`driver`] and take plain URLs, so tests can run them against
//! servers started in-process.
//!
//! Three more measure ownership across instances, on a [`cluster`] of instances
//! sharing one Redis: `failover` ([`failover`]: how long the rooms of a killed instance
//! take to be playable again), `ownership-cost` ([`ownership_cost`]: Redis commands
//! spent on ownership while rooms sit idle) and `bench-fencing` ([`fencing`]: move
//! latency and throughput with fencing against a build without it). Their players are
//! [`seated`] lobbies on the SDK's reconnecting sessions.
//!
//! `leaderboard` ([`leaderboard`]) times a page of the public leaderboard at growing
//! board sizes, the players written straight into Redis.
//! `edge` ([`edge`]) measures the server's edge under abuse: connections held at the
//! cap, half-open and un-greeted connections left to their deadlines, and an innocent
//! game while one address floods.
//! `dormant` ([`dormant`]) measures what idle correspondence lobbies cost once the
//! server has unloaded them to Redis, and how long loading one takes on a join.
//! `bench-cluster` ([`bench_cluster`]) runs `bench`'s saturation phase on a server
//! backed by a [`redis_cluster`] of three masters and on one backed by one Redis.
//! `resume` ([`resume`]) times a start that resumes 10,000 or 100,000 open lobbies
//! copied straight into Redis, optionally with a network's round trip added
//! between the server and Redis by a [`delay`] proxy.
//! `year` ([`year`]) writes what the retention policy leaves of a year of play into
//! a fresh Redis (sample rooms played through a server, copied; accounts simulated)
//! and measures its memory by key family.

pub mod bench;
pub mod bench_cluster;
pub mod bots;
pub mod cluster;
pub mod delay;
pub mod dormant;
pub mod driver;
pub mod echo;
pub mod edge;
pub mod failover;
pub mod fencing;
pub mod hot_slots;
pub mod leaderboard;
pub mod net;
pub mod ownership_cost;
pub mod procs;
pub mod redis_cluster;
pub mod report;
pub mod resume;
pub mod seated;
pub mod svg;
pub mod year;
