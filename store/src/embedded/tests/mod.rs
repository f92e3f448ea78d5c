//! The embedded wallets, records and leaderboards against the memory ones:
//! every body here runs once on each ([`on_both!`] makes the two tests),
//! the embedded store on a fresh data directory of its own; then what only
//! the embedded store has (its clock moved on, its data read back after a
//! reopening, its boards' trees kept right).

mod boards;
mod records;
mod reopen;
mod wallets;

use super::Db;

/// Which implementation a body runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Memory,
    Embedded,
}

/// A store under test, with what it reads the time from; the embedded
/// one's data directory lives as long as it does.
struct Under<S: ?Sized> {
    store: Box<S>,
    db: Option<Db>,
    _dir: Option<tempfile::TempDir>,
}

impl<S: ?Sized> std::ops::Deref for Under<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.store
    }
}

impl<S: ?Sized> Under<S> {
    /// The store's clock, Unix ms: this process's for the memory stores
    /// ([`crate::sync::now_ms`]), the data file's for the embedded ones.
    fn now(&self) -> u64 {
        self.db
            .as_ref()
            .map_or_else(crate::sync::now_ms, Db::now_ms)
    }
}

/// Opens the store of `kind`: the memory one, or the embedded one on a
/// fresh temporary directory.
fn open<S: ?Sized>(
    kind: Kind,
    memory: impl FnOnce() -> Box<S>,
    embedded: impl FnOnce(Db) -> Box<S>,
) -> Under<S> {
    match kind {
        Kind::Memory => Under {
            store: memory(),
            db: None,
            _dir: None,
        },
        Kind::Embedded => {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let db = Db::open(dir.path()).expect("a fresh data directory opens");
            Under {
                store: embedded(db.clone()),
                db: Some(db),
                _dir: Some(dir),
            }
        }
    }
}

/// Makes, for each named `async fn NAME(kind: Kind)`, a module `NAME`
/// with the tests `memory` and `embedded` running it on each store.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn memory() {
                super::$name(crate::embedded::tests::Kind::Memory).await;
            }

            #[tokio::test]
            async fn embedded() {
                super::$name(crate::embedded::tests::Kind::Embedded).await;
            }
        }
    )*};
}
use on_both;
