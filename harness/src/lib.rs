//! The one harness that starts real parts for the end-to-end tests
//! (`jumpgate-e2e`) and the load tester (`jumpgate-loadtest`): a
//! `redis-server` ([`redis`]), a Redis Cluster ([`redis_cluster`]), HAProxy
//! running the repository's `deploy/haproxy.cfg` ([`haproxy`]), `jumpgate
//! serve` processes ([`jumpgate`]), and free loopback ports ([`ports`]).
//!
//! It talks to what it starts over sockets and signals only, never through
//! the server's library, so it cannot drift into testing an in-process
//! shortcut. Every process is killed when its handle is dropped (also on a
//! panic), and every scratch directory removed.
//!
//! Each part has a fallible constructor that returns `Result<_, String>`
//! (the load tester reports the error) and a short one for tests that
//! panics with the same message.

pub mod haproxy;
pub mod http;
pub mod jumpgate;
pub mod ports;
pub mod process;
pub mod redis;
pub mod redis_cluster;

pub use haproxy::{Balancer, BalancerOptions, FrontProxy, Via};
pub use jumpgate::{
    BotWorkerProcess, JumpgateOptions, JumpgateProcess, NO_CLIENT_LIMITS, TEST_SECRET,
    jumpgate_binary,
};
pub use ports::{free_loopback_addr, free_port};
pub use process::{Output, ProcessSpec, ServerProcess, Transcript};
pub use redis::{AppendOnly, RedisOptions, RedisServer};
pub use redis_cluster::{ClusterOptions, RedisCluster};

/// Where a client can reach a server over WebSocket: an in-process test
/// server, a process, or a balancer in front of some.
pub trait Endpoint {
    /// The `ws://` URL to connect to.
    fn ws(&self) -> String;
}
