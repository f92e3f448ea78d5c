//! Per-client limits at the edge: who a client is (its address, through a
//! trusted proxy when configured), how many connections it holds, and how
//! fast it may send messages, open connections and create rooms.
//!
//! A "client address" is an IPv4 address or an IPv6 /64 (one subscriber's
//! usual allocation, so rotating through it gains nothing). Rate limits are
//! token buckets from `governor`, keyed by address or identity; counters of
//! open connections are plain maps whose entries leave with their last
//! connection. Every map is bounded: buckets that have refilled are dropped
//! by [`ClientLimits::forget_idle`], which the server runs every minute.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;

use crate::app::App;
use crate::sync::lock;

/// The limits' settings (see the `--max-connections-per-address` family of
/// flags); a rate of 0 turns that limit off.
#[derive(Clone, Debug)]
pub struct LimitSettings {
    /// Most WebSocket connections from one client address.
    pub connections_per_address: usize,
    /// Most WebSocket connections greeted with one identity.
    pub connections_per_identity: usize,
    /// Messages per second from one address, over all its connections.
    pub messages_per_second: u32,
    /// New lobbies and solo games per minute from one address.
    pub rooms_per_minute_per_address: u32,
    /// New lobbies and solo games per minute for one identity.
    pub rooms_per_minute_per_identity: u32,
    /// HTTP requests per second from one address (WebSocket upgrades
    /// included; health, readiness and metrics excluded).
    pub http_per_second: u32,
    /// Peers whose client-address header is believed.
    pub trusted_proxies: Vec<IpNet>,
    /// The header trusted proxies name the client in (read from the right;
    /// see [`ClientAddr::resolve`]).
    pub client_address_header: String,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            connections_per_address: 64,
            connections_per_identity: 8,
            messages_per_second: 100,
            rooms_per_minute_per_address: 30,
            rooms_per_minute_per_identity: 10,
            http_per_second: 20,
            trusted_proxies: Vec::new(),
            client_address_header: "x-forwarded-for".into(),
        }
    }
}

impl LimitSettings {
    /// No per-client limit at all: for tests and load tests, whose every
    /// client shares one loopback address.
    pub fn unlimited() -> LimitSettings {
        LimitSettings {
            connections_per_address: usize::MAX,
            connections_per_identity: usize::MAX,
            messages_per_second: 0,
            rooms_per_minute_per_address: 0,
            rooms_per_minute_per_identity: 0,
            http_per_second: 0,
            ..LimitSettings::default()
        }
    }

    /// Whether `peer` is a trusted proxy. An IPv4 peer reaching a dual-stack
    /// (`[::]`) listener shows as `::ffff:a.b.c.d`: it is compared as the
    /// IPv4 address it is.
    pub fn is_trusted(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.trusted_proxies.iter().any(|net| net.contains(&peer))
    }

    /// The flags that give [`unlimited`](Self::unlimited) to `jumpgate
    /// serve`, as environment variables.
    pub const UNLIMITED_ENV: &[(&str, &str)] = &[
        ("JUMPGATE_MAX_CONNECTIONS_PER_ADDRESS", "1000000000"),
        ("JUMPGATE_MAX_CONNECTIONS_PER_IDENTITY", "1000000000"),
        ("JUMPGATE_MESSAGES_PER_SECOND_PER_ADDRESS", "0"),
        ("JUMPGATE_ROOMS_PER_MINUTE_PER_ADDRESS", "0"),
        ("JUMPGATE_ROOMS_PER_MINUTE_PER_IDENTITY", "0"),
        ("JUMPGATE_HTTP_REQUESTS_PER_SECOND_PER_ADDRESS", "0"),
    ];
}

/// A client's address as the limits count it: an IPv4 address, or the /64
/// an IPv6 address belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientAddr(IpAddr);

impl ClientAddr {
    pub fn new(ip: IpAddr) -> ClientAddr {
        match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientAddr(IpAddr::V4(v4)),
                None => {
                    let bits = u128::from(v6) & !((1u128 << 64) - 1);
                    ClientAddr(IpAddr::V6(Ipv6Addr::from(bits)))
                }
            },
            v4 => ClientAddr(v4),
        }
    }

    /// The client behind a request that arrived from `peer`. A peer that is
    /// not a trusted proxy is the client. From a trusted proxy, the
    /// configured header's entries (every line of it, in order) are read
    /// from the right, the end each proxy appends to, past every address
    /// that is itself a trusted proxy: the first one that is not is the
    /// client (anything to its left was written by the client and may be
    /// forged). If every entry is a trusted proxy, the leftmost is the
    /// client; an entry that is not an address ends the walk at the hop
    /// that wrote it (the entry to its right, or the peer).
    pub fn resolve(peer: IpAddr, headers: &axum::http::HeaderMap, limits: &LimitSettings) -> Self {
        let mut client = peer;
        if !limits.is_trusted(peer) {
            return ClientAddr::new(client);
        }
        let lines: Vec<&str> = headers
            .get_all(limits.client_address_header.as_str())
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let entries = lines.iter().rev().flat_map(|line| line.rsplit(','));
        for entry in entries.take(MAX_PROXY_HOPS) {
            let Ok(hop) = entry.trim().parse::<IpAddr>() else {
                break;
            };
            client = hop;
            if !limits.is_trusted(hop) {
                break;
            }
        }
        ClientAddr::new(client)
    }
}

/// Most entries of a client-address header looked at, from the right: a
/// chain of proxies is never this long, and a forged one costs no more.
const MAX_PROXY_HOPS: usize = 16;

impl std::fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
            v4 => write!(f, "{v4}"),
        }
    }
}

impl FromRequestParts<Arc<App>> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<App>,
    ) -> Result<Self, Self::Rejection> {
        // Requests made without a peer (router tests) count as loopback.
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::from([127, 0, 0, 1]), |c| c.0.ip());
        Ok(ClientAddr::resolve(
            peer,
            &parts.headers,
            &state.settings.limits,
        ))
    }
}

/// What went over a limit, and when to try again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TryAgain(pub Duration);

impl TryAgain {
    /// Whole seconds, at least one (for `Retry-After`).
    pub fn secs(self) -> u64 {
        self.0.as_secs_f64().ceil().max(1.0) as u64
    }
}

/// The state of every per-client limit.
#[derive(Debug)]
pub struct ClientLimits {
    settings: LimitSettings,
    messages: Option<Arc<DefaultKeyedRateLimiter<ClientAddr>>>,
    /// One queue per address whose messages are being held back: its
    /// connections wait their turn in order, and only the first sleeps
    /// until the bucket has a token (no herd waking at every token).
    message_queues: Arc<Mutex<HashMap<ClientAddr, Arc<tokio::sync::Mutex<()>>>>>,
    rooms_by_address: Option<DefaultKeyedRateLimiter<ClientAddr>>,
    rooms_by_identity: Option<DefaultKeyedRateLimiter<String>>,
    http: Option<DefaultKeyedRateLimiter<ClientAddr>>,
    by_address: Arc<Mutex<HashMap<ClientAddr, usize>>>,
    /// Connections from each untrusted peer still in HTTP (not upgraded).
    http_by_address: Arc<Mutex<HashMap<ClientAddr, usize>>>,
    by_identity: Arc<Mutex<HashMap<String, usize>>>,
}

fn keyed<K: std::hash::Hash + Eq + Clone>(
    quota: Option<Quota>,
) -> Option<DefaultKeyedRateLimiter<K>> {
    quota.map(RateLimiter::keyed)
}

/// `rate` per second with a burst of twice that; `None` for 0.
fn per_second(rate: u32) -> Option<Quota> {
    let rate = NonZeroU32::new(rate)?;
    let burst = rate.saturating_mul(NonZeroU32::new(2).expect("2 is not zero"));
    Some(Quota::per_second(rate).allow_burst(burst))
}

/// `rate` per minute, all of it available at once; `None` for 0.
fn per_minute(rate: u32) -> Option<Quota> {
    NonZeroU32::new(rate).map(Quota::per_minute)
}

impl ClientLimits {
    pub fn new(settings: LimitSettings) -> ClientLimits {
        ClientLimits {
            messages: keyed(per_second(settings.messages_per_second)).map(Arc::new),
            message_queues: Arc::default(),
            rooms_by_address: keyed(per_minute(settings.rooms_per_minute_per_address)),
            rooms_by_identity: keyed(per_minute(settings.rooms_per_minute_per_identity)),
            http: keyed(per_second(settings.http_per_second)),
            by_address: Arc::default(),
            http_by_address: Arc::default(),
            by_identity: Arc::default(),
            settings,
        }
    }

    /// One more message from `addr`, now: `Err` when it must wait its turn
    /// ([`message_turn`](Self::message_turn)); the connection stops reading
    /// until then. Nobody jumps the queue: while connections of the address
    /// wait, a new message waits too.
    pub fn message(&self, addr: ClientAddr) -> Result<(), TryAgain> {
        let queued = lock(&self.message_queues).contains_key(&addr);
        if queued {
            return Err(TryAgain(Duration::ZERO));
        }
        check(self.messages.as_deref(), &addr)
    }

    /// Resolves when a held message from `addr` may be handled: the
    /// address's waiting connections are served in order, and only the
    /// first of them sleeps until the bucket refills.
    pub fn message_turn(
        &self,
        addr: ClientAddr,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let limiter = self.messages.clone();
        let queues = self.message_queues.clone();
        let queue = lock(&queues).entry(addr).or_default().clone();
        async move {
            let turn = queue.clone().lock_owned().await;
            if let Some(limiter) = &limiter {
                while let Err(wait) = check(Some(&**limiter), &addr) {
                    tokio::time::sleep(wait.0).await;
                }
            }
            // The last one out takes the queue away (the map holds one
            // reference, this future another).
            drop(turn);
            let mut map = lock(&queues);
            if Arc::strong_count(&queue) == 2 {
                map.remove(&addr);
            }
        }
    }

    /// One more HTTP request (or WebSocket upgrade) from `addr`.
    pub fn http_request(&self, addr: ClientAddr) -> Result<(), TryAgain> {
        check(self.http.as_ref(), &addr)
    }

    /// One more lobby or solo game created from `addr` by `identity`.
    pub fn new_room(&self, addr: ClientAddr, identity: &str) -> Result<(), TryAgain> {
        check(self.rooms_by_identity.as_ref(), &identity.to_owned())?;
        check(self.rooms_by_address.as_ref(), &addr)
    }

    /// A WebSocket connection slot for `addr`, or `None` when it holds as
    /// many as it may.
    pub fn connect(&self, addr: ClientAddr) -> Option<HeldSlot<ClientAddr>> {
        HeldSlot::take(
            &self.by_address,
            addr,
            self.settings.connections_per_address,
        )
    }

    /// A slot for a TCP connection from `addr` that has not upgraded
    /// (taken at accept, for peers that are not trusted proxies), or `None`.
    pub fn accept(&self, addr: ClientAddr) -> Option<HeldSlot<ClientAddr>> {
        HeldSlot::take(
            &self.http_by_address,
            addr,
            self.settings.connections_per_address,
        )
    }

    /// A connection slot for `identity` (taken at `hello`), or `None`.
    pub fn greet(&self, identity: &str) -> Option<HeldSlot<String>> {
        HeldSlot::take(
            &self.by_identity,
            identity.to_owned(),
            self.settings.connections_per_identity,
        )
    }

    /// Drops the buckets that have refilled (they hold no information).
    pub fn forget_idle(&self) {
        for limiter in [
            self.messages.as_deref(),
            self.http.as_ref(),
            self.rooms_by_address.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        if let Some(limiter) = &self.rooms_by_identity {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        // A queue whose last waiter went away mid-wait (its connection
        // closed) is held by the map alone: nobody is in it.
        lock(&self.message_queues).retain(|_, queue| Arc::strong_count(queue) > 1);
    }

    /// Addresses with at least one connection open.
    pub fn addresses_connected(&self) -> usize {
        lock(&self.by_address).len()
    }
}

fn check<K: std::hash::Hash + Eq + Clone>(
    limiter: Option<&DefaultKeyedRateLimiter<K>>,
    key: &K,
) -> Result<(), TryAgain> {
    let Some(limiter) = limiter else {
        return Ok(());
    };
    limiter
        .check_key(key)
        .map_err(|not_until| TryAgain(not_until.wait_time_from(DefaultClock::default().now())))
}

/// One counted connection of a key; the count goes down when it drops, and
/// the key leaves the map with its last connection.
#[derive(Debug)]
pub struct HeldSlot<K: std::hash::Hash + Eq> {
    counts: Arc<Mutex<HashMap<K, usize>>>,
    key: Option<K>,
}

impl<K: std::hash::Hash + Eq + Clone> HeldSlot<K> {
    fn take(counts: &Arc<Mutex<HashMap<K, usize>>>, key: K, max: usize) -> Option<Self> {
        let mut map = lock(counts);
        let held = map.entry(key.clone()).or_insert(0);
        if *held >= max {
            if *held == 0 {
                map.remove(&key);
            }
            return None;
        }
        *held += 1;
        Some(HeldSlot {
            counts: counts.clone(),
            key: Some(key),
        })
    }
}

impl<K: std::hash::Hash + Eq> Drop for HeldSlot<K> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let mut map = lock(&self.counts);
        if let Some(held) = map.get_mut(&key) {
            *held -= 1;
            if *held == 0 {
                map.remove(&key);
            }
        }
    }
}

/// Parses `--trusted-proxies`: addresses or CIDR blocks.
pub fn parse_proxy(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("{text:?} is not an IP address or CIDR block"))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderMap;

    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_ipv6_client_is_its_64() {
        let a = ClientAddr::new(ip("2001:db8:1:2:aaaa::1"));
        let b = ClientAddr::new(ip("2001:db8:1:2:ffff::9"));
        let c = ClientAddr::new(ip("2001:db8:1:3::1"));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.to_string(), "2001:db8:1:2::/64");
        assert_eq!(
            ClientAddr::new(ip("::ffff:10.1.2.3")),
            ClientAddr::new(ip("10.1.2.3"))
        );
    }

    fn headers_with(forwarded: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", forwarded.parse().unwrap());
        headers
    }

    #[test]
    fn the_header_is_believed_only_from_a_trusted_proxy() {
        let settings = LimitSettings {
            trusted_proxies: vec![
                parse_proxy("10.0.0.0/8").unwrap(),
                parse_proxy("192.0.2.7").unwrap(),
            ],
            ..LimitSettings::default()
        };
        let mut headers = HeaderMap::new();
        // The client may forge the first entries; the proxy appends the last.
        headers.insert("x-forwarded-for", "6.6.6.6, 203.0.113.5".parse().unwrap());
        let via_proxy = ClientAddr::resolve(ip("10.1.1.1"), &headers, &settings);
        assert_eq!(via_proxy, ClientAddr::new(ip("203.0.113.5")));
        let direct = ClientAddr::resolve(ip("198.51.100.1"), &headers, &settings);
        assert_eq!(direct, ClientAddr::new(ip("198.51.100.1")));
        // A trusted peer without a readable header is itself the client.
        let plain = ClientAddr::resolve(ip("192.0.2.7"), &HeaderMap::new(), &settings);
        assert_eq!(plain, ClientAddr::new(ip("192.0.2.7")));
        // Past every trusted proxy, from the right: the first untrusted
        // entry is the client, whatever the client wrote to its left.
        headers.insert(
            "x-forwarded-for",
            "6.6.6.6, 203.0.113.5, 10.2.2.2, 192.0.2.7".parse().unwrap(),
        );
        let chained = ClientAddr::resolve(ip("10.1.1.1"), &headers, &settings);
        assert_eq!(chained, ClientAddr::new(ip("203.0.113.5")));
        // Several header lines are one list, the last line the nearest.
        let mut lines = HeaderMap::new();
        lines.append("x-forwarded-for", "6.6.6.6, 198.51.100.4".parse().unwrap());
        lines.append("x-forwarded-for", "10.3.3.3".parse().unwrap());
        let split = ClientAddr::resolve(ip("10.1.1.1"), &lines, &settings);
        assert_eq!(split, ClientAddr::new(ip("198.51.100.4")));
        // Only proxies in the list: the farthest one is all we know.
        let all_proxies = ClientAddr::resolve(
            ip("10.1.1.1"),
            &headers_with("10.9.9.9, 10.3.3.3"),
            &settings,
        );
        assert_eq!(all_proxies, ClientAddr::new(ip("10.9.9.9")));
        // A junk entry ends the walk at the proxy that wrote it.
        let broken = ClientAddr::resolve(
            ip("10.1.1.1"),
            &headers_with("203.0.113.5, junk, 10.3.3.3"),
            &settings,
        );
        assert_eq!(broken, ClientAddr::new(ip("10.3.3.3")));
        headers.insert("x-forwarded-for", "not an address".parse().unwrap());
        let junk = ClientAddr::resolve(ip("10.1.1.1"), &headers, &settings);
        assert_eq!(junk, ClientAddr::new(ip("10.1.1.1")));
        // An IPv4 proxy seen through a dual-stack listener is still trusted.
        let mapped = ClientAddr::resolve(
            ip("::ffff:10.1.1.1"),
            &headers_with("203.0.113.9"),
            &settings,
        );
        assert_eq!(mapped, ClientAddr::new(ip("203.0.113.9")));
        assert!(parse_proxy("10.0.0.0/33").is_err());
        assert!(parse_proxy("proxy").is_err());
    }

    #[test]
    fn connection_slots_are_counted_and_given_back() {
        let limits = ClientLimits::new(LimitSettings {
            connections_per_address: 2,
            connections_per_identity: 1,
            ..LimitSettings::default()
        });
        let addr = ClientAddr::new(ip("192.0.2.1"));
        let one = limits.connect(addr).unwrap();
        let two = limits.connect(addr).unwrap();
        assert!(limits.connect(addr).is_none());
        assert!(limits.connect(ClientAddr::new(ip("192.0.2.2"))).is_some());
        drop(one);
        let three = limits.connect(addr).unwrap();
        drop((two, three));
        assert_eq!(limits.addresses_connected(), 0);
        let greeted = limits.greet("G-1").unwrap();
        assert!(limits.greet("G-1").is_none());
        drop(greeted);
        assert!(limits.greet("G-1").is_some());
    }

    #[tokio::test]
    async fn held_messages_take_their_turns_in_order_and_nobody_jumps_the_queue() {
        let limits = Arc::new(ClientLimits::new(LimitSettings {
            messages_per_second: 100,
            ..LimitSettings::default()
        }));
        let addr = ClientAddr::new(ip("192.0.2.1"));
        while limits.message(addr).is_ok() {}
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
        let turns: Vec<_> = (0..3)
            .map(|i| {
                let turn = limits.message_turn(addr);
                let done = done_tx.clone();
                tokio::spawn(async move {
                    turn.await;
                    done.send(i).unwrap();
                })
            })
            .collect();
        // While they wait, a new message from the address waits too.
        assert!(limits.message(addr).is_err());
        for turn in turns {
            turn.await.unwrap();
        }
        let order: Vec<i32> = std::iter::from_fn(|| done_rx.try_recv().ok()).collect();
        assert_eq!(order, [0, 1, 2]);
        assert!(
            limits.message_queues.lock().unwrap().is_empty(),
            "the queue is gone"
        );
        // A waiter that goes away mid-wait leaves its queue behind until the
        // next message from the address, or the minute's clean-up.
        while limits.message(addr).is_ok() {}
        drop(limits.message_turn(addr));
        assert!(
            limits.message(addr).is_err(),
            "an empty queue still makes messages wait"
        );
        limits.forget_idle();
        assert!(
            limits.message_queues.lock().unwrap().is_empty(),
            "the clean-up took it"
        );
        // Another address never waited.
        limits.message(ClientAddr::new(ip("192.0.2.2"))).unwrap();
    }

    #[test]
    fn buckets_refuse_past_their_burst_and_say_when() {
        let limits = ClientLimits::new(LimitSettings {
            messages_per_second: 5,
            rooms_per_minute_per_identity: 2,
            rooms_per_minute_per_address: 3,
            ..LimitSettings::default()
        });
        let addr = ClientAddr::new(ip("192.0.2.1"));
        for _ in 0..10 {
            limits.message(addr).unwrap();
        }
        let wait = limits.message(addr).unwrap_err();
        assert!(wait.0 > Duration::ZERO && wait.0 <= Duration::from_millis(200));
        limits.message(ClientAddr::new(ip("192.0.2.9"))).unwrap();
        limits.new_room(addr, "a").unwrap();
        limits.new_room(addr, "a").unwrap();
        assert!(limits.new_room(addr, "a").is_err(), "per identity");
        limits.new_room(addr, "b").unwrap();
        let wait = limits.new_room(addr, "c").unwrap_err();
        assert!(wait.secs() >= 1, "per address");
        let off = ClientLimits::new(LimitSettings {
            messages_per_second: 0,
            ..LimitSettings::default()
        });
        for _ in 0..10_000 {
            off.message(addr).unwrap();
        }
    }
}
