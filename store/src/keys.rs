//! The Redis key names and prefixes the server writes under: the stores
//! build their keys from these, and tools that read or fill a deployment's
//! Redis (the load tester) use them too, so a change of layout changes
//! both. Rooms, instances, identities and leaderboards have a function per
//! key here; wallets and records have their prefix here and build the rest
//! (balances, ledgers, escrow, idempotency keys) in their own modules.
//!
//! A room's keys share the hash tag `{CODE}` (one Redis Cluster slot per
//! room); an instance's keys the tag `{ID}`; an identity's the tag
//! `{IDENTITY}`. Wallets, records and leaderboards each live under one tag
//! of their own (`{wallets}`, `{records}`, `{boards}`), since their
//! scripts move points or counts between accounts atomically (the wallet
//! scripts also spell their ledger and archive prefixes out in Lua). What each key
//! holds is documented on the store that writes it (`RedisStore`,
//! `RedisWallets`, `RedisRecords`, `RedisLeaderboards`).

/// The set of open lobby codes (and solo game ids).
pub const OPEN_SET: &str = "jg:lobbies";
/// Every instance that may still own rooms.
pub const INSTANCES: &str = "jg:instances";
/// Rooms released by their owner, for anyone to take.
pub const RELEASED: &str = "jg:orphans";
/// Unloaded rooms by when they are due (a sorted set, Unix ms).
pub const DORMANT: &str = "jg:dormant";
/// The storage format this Redis holds (see `preflight`).
pub const FORMAT_KEY: &str = "jg:storage-format";

/// The prefix of every wallet key (one slot).
pub const WALLETS: &str = "jgw:{wallets}";
/// The prefix of every record key (one slot).
pub const RECORDS: &str = "jgr:{records}";
/// The prefix of every leaderboard key (one slot).
pub const BOARDS: &str = "jgl:{boards}";

/// A room's keys: its record, its move log, its finished games, its fence.
pub fn room_keys(code: &str) -> [String; 4] {
    [
        format!("jg:{{{code}}}:room"),
        format!("jg:{{{code}}}:moves"),
        format!("jg:{{{code}}}:games"),
        format!("jg:{{{code}}}:fence"),
    ]
}

/// An instance's heartbeat, expiring after its TTL.
pub fn alive_key(instance: &str) -> String {
    format!("jg:alive:{{{instance}}}")
}

/// Set while an instance starts or shuts down (beside its heartbeat, in
/// its slot).
pub fn unready_key(instance: &str) -> String {
    format!("jg:unready:{{{instance}}}")
}

/// The rooms an instance has claimed.
pub fn owned_key(instance: &str) -> String {
    format!("jg:owned:{{{instance}}}")
}

/// The lobbies an identity took a seat in ("my games").
pub fn mine_key(identity: &str) -> String {
    format!("jg:mine:{{{identity}}}")
}

/// The solo game an identity last started.
pub fn solo_key(identity: &str) -> String {
    format!("jg:solo:{{{identity}}}")
}

/// The channel on which other instances ask one to hand rooms over.
pub fn handover_channel(instance: &str) -> String {
    format!("jg:handover:{instance}")
}

/// A leaderboard's standings (a hash, account to standing).
pub fn board_key(rule_set: &str) -> String {
    format!("{BOARDS}:{rule_set}")
}

/// A leaderboard's page order (a sorted set read by rank).
pub fn board_order_key(rule_set: &str) -> String {
    format!("{BOARDS}:{rule_set}:order")
}

/// Set once a leaderboard's order has been filled in.
pub fn board_ordered_key(rule_set: &str) -> String {
    format!("{BOARDS}:{rule_set}:ordered")
}

/// The computer's search jobs: one Redis Stream that instances add to and
/// searchers read through the consumer group [`SEARCH_GROUP`]. Every search
/// key shares the tag `{search}` (one slot).
pub const SEARCH_JOBS: &str = "jg:{search}:jobs";
/// The consumer group every searcher reads [`SEARCH_JOBS`] through.
pub const SEARCH_GROUP: &str = "searchers";
/// Finished searches, announced to every instance (a capped stream).
pub const SEARCH_RESULTS: &str = "jg:{search}:results";
/// Searchers alive: a sorted set of `WORKER|THREADS` by heartbeat expiry (Unix ms).
pub const SEARCH_WORKERS: &str = "jg:{search}:workers";

/// The move a search found for `job` (`GAME:VERSION`), written once.
pub fn search_result_key(job: &str) -> String {
    format!("jg:{{search}}:result:{job}")
}
