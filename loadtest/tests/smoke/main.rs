//! The load tester's smoke tests, one binary: a short run of each mode
//! against a real server.

mod bench;
mod bench_cluster;
mod bots;
mod dormant;
mod edge;
mod leaderboard;
mod seated;
