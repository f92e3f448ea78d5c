//! The stores an instance runs on, opened once: Redis when the settings
//! name a URL (one multiplexed connection, shared by the room store, the
//! wallets, the records, the leaderboards and the checks at start; the
//! handover subscription has its own, as pub/sub needs), else the data
//! directory's file (one database thread shared the same way), else
//! memory.

use std::sync::Arc;

use crate::config::Settings;
use crate::leaderboard::{Leaderboards, MemoryLeaderboards, RedisLeaderboards};
use crate::records::{MemoryRecords, Records, RedisRecords};
use crate::store::embedded::{Db, EmbeddedLeaderboards, EmbeddedRecords, EmbeddedWallets};
use crate::store::{
    EmbeddedStore, MemoryStore, RedisConn, RedisStore, Store, StoreError, redis_connection,
};
use crate::wallet::{MemoryWallets, RedisWallets, Wallets};

/// The stores; cheap to clone.
#[derive(Debug, Clone)]
pub struct Backends {
    pub store: Arc<dyn Store>,
    pub wallets: Arc<dyn Wallets>,
    pub records: Arc<dyn Records>,
    pub leaderboards: Arc<dyn Leaderboards>,
    /// The shared Redis connection, when there is one (the checks at start
    /// use it too).
    pub redis: Option<RedisConn>,
}

impl Backends {
    /// The stores the settings ask for.
    pub fn open(settings: &Settings) -> Result<Backends, OpenError> {
        let window = settings.wallet_rules.window;
        let Some(url) = &settings.redis_url else {
            return match &settings.data_dir {
                Some(dir) => Ok(Backends::embedded(&Db::open(dir)?, settings)),
                None => Ok(Backends::in_memory(settings)),
            };
        };
        let conn = redis_connection(url, settings.redis_timeout)?;
        Ok(Backends {
            store: Arc::new(RedisStore::on(conn.clone(), url)?),
            wallets: Arc::new(RedisWallets::on(conn.clone(), settings.wallet_rules)),
            records: Arc::new(RedisRecords::on(conn.clone(), window)),
            leaderboards: Arc::new(RedisLeaderboards::on(conn.clone(), window)),
            redis: Some(conn),
        })
    }

    /// Every store in one data file (see [`Db`]).
    pub fn embedded(db: &Db, settings: &Settings) -> Backends {
        let window = settings.wallet_rules.window;
        Backends {
            store: Arc::new(EmbeddedStore::on(db.clone())),
            wallets: Arc::new(EmbeddedWallets::on(db.clone(), settings.wallet_rules)),
            records: Arc::new(EmbeddedRecords::on(db.clone(), window)),
            leaderboards: Arc::new(EmbeddedLeaderboards::on(db.clone(), window)),
            redis: None,
        }
    }

    /// Every store in memory: nothing survives a restart.
    pub fn in_memory(settings: &Settings) -> Backends {
        let window = settings.wallet_rules.window;
        Backends {
            store: Arc::new(MemoryStore::default()),
            wallets: Arc::new(MemoryWallets::new(settings.wallet_rules)),
            records: Arc::new(MemoryRecords::new(window)),
            leaderboards: Arc::new(MemoryLeaderboards::new(window)),
            redis: None,
        }
    }
}

/// Why the stores could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Redis(#[from] StoreError),
    #[error(transparent)]
    DataDir(#[from] crate::store::embedded::OpenError),
}
