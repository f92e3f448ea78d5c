//! The embedded store's ownership: fences live in the rooms table (claims,
//! releases, homes, kept exactly as in Redis, so fencing behaves the same);
//! heartbeats and readiness live in this process only, because the
//! directory's lock lets one process at a time run on the file: whoever
//! held it before is gone, and every room it owned is an orphan.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::params;
use tokio::sync::mpsc;

use super::EmbeddedStore;
use super::rooms::{fence, holds, int, stored_room};
use crate::sync::lock;
use crate::{Beat, Claimed, Fence, Orphan, OwnerEpoch, OwnershipStore, PerRoom, StoreFuture};

/// Heartbeats and "not ready" marks, by instance.
#[derive(Debug, Default)]
pub(super) struct Liveness {
    beats: HashMap<String, (String, Instant)>,
    unready: HashMap<String, Instant>,
    /// Where the last look at this instance's own rooms stopped.
    own_cursor: String,
}

impl Liveness {
    fn alive(&self, instance: &str, now: Instant) -> bool {
        self.beats
            .get(instance)
            .is_some_and(|(_, until)| *until > now)
    }
}

/// The longest an instance is marked not ready.
const UNREADY_AT_MOST: Duration = Duration::from_secs(600);

fn claim_in(
    t: &super::db::Tx<'_>,
    code: &str,
    seen: &Fence,
    me: &Arc<str>,
) -> rusqlite::Result<Option<OwnerEpoch>> {
    let Some(room) = stored_fence(t, code)? else {
        return Ok(None);
    };
    if room.0 != seen.owner || room.1 != seen.epoch {
        return Ok(None);
    }
    let epoch = room.1 + 1;
    t.conn
        .prepare_cached(
            "UPDATE rooms SET owner = ?2, epoch = ?3, handed = 0, parked = 0 WHERE code = ?1",
        )?
        .execute(params![code, &**me, int(epoch)])?;
    Ok(Some(OwnerEpoch {
        instance: me.clone(),
        epoch,
    }))
}

/// Owner and epoch of a stored room, open or not (a claim needs only that
/// it exists, as in Redis).
fn stored_fence(
    t: &super::db::Tx<'_>,
    code: &str,
) -> rusqlite::Result<Option<(Option<String>, u64)>> {
    use rusqlite::OptionalExtension;
    t.conn
        .prepare_cached(
            "SELECT owner, epoch FROM rooms WHERE code = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
        )?
        .query_row(params![code, int(t.now)], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))
        })
        .optional()
}

impl OwnershipStore for EmbeddedStore {
    fn fence<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<Fence>> {
        let code = code.to_owned();
        Box::pin(self.db.call(move |t| fence(t, &code)))
    }

    fn fences<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, PerRoom<Option<Fence>>> {
        let codes = codes.to_vec();
        Box::pin(
            self.db
                .call(move |t| codes.iter().map(|code| fence(t, code).map(Ok)).collect()),
        )
    }

    fn claim<'a>(
        &'a self,
        code: &'a str,
        seen: &'a Fence,
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, Option<OwnerEpoch>> {
        let (code, seen, me) = (code.to_owned(), seen.clone(), me.clone());
        Box::pin(self.db.call(move |t| claim_in(t, &code, &seen, &me)))
    }

    fn claim_and_load<'a>(
        &'a self,
        rooms: &'a [(String, Fence)],
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, PerRoom<Claimed>> {
        // One transaction (one commit) for the whole batch.
        let (rooms, me) = (rooms.to_vec(), me.clone());
        Box::pin(self.db.call(move |t| {
            let mut claimed = Vec::with_capacity(rooms.len());
            for (code, seen) in &rooms {
                claimed.push(Ok(match claim_in(t, code, seen, &me)? {
                    Some(owner) => Claimed::Won {
                        owner,
                        stored: Ok(stored_room(t, code)?),
                    },
                    None => Claimed::Lost,
                }));
            }
            Ok(claimed)
        }))
    }

    fn release<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        to: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        let (code, owner, to) = (code.to_owned(), owner.clone(), to.map(str::to_owned));
        Box::pin(self.db.call(move |t| {
            if !holds(t, &code, &owner)? {
                return Ok(false);
            }
            match to {
                Some(to) => t
                    .conn
                    .prepare_cached(
                        "UPDATE rooms SET owner = ?2, epoch = epoch + 1, handed = 1 WHERE code = ?1",
                    )?
                    .execute(params![code, to])?,
                None => t
                    .conn
                    .prepare_cached("UPDATE rooms SET owner = NULL WHERE code = ?1")?
                    .execute(params![code])?,
            };
            Ok(true)
        }))
    }

    fn set_home<'a>(
        &'a self,
        code: &'a str,
        me: &'a str,
        home: &'a str,
        only_if_unset: bool,
    ) -> StoreFuture<'a, Option<String>> {
        let (code, me, home) = (code.to_owned(), me.to_owned(), home.to_owned());
        Box::pin(self.db.call(move |t| {
            use rusqlite::OptionalExtension;
            let row: Option<(Option<String>, Option<String>)> = t
                .conn
                .prepare_cached(
                    "SELECT owner, home FROM rooms WHERE code = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
                )?
                .query_row(params![code, int(t.now)], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let Some((owner, named)) = row else {
                return Ok(None);
            };
            if owner.as_deref() != Some(&*me) {
                return Ok(None);
            }
            if only_if_unset && named.is_some() {
                return Ok(named);
            }
            t.conn
                .prepare_cached("UPDATE rooms SET home = ?2 WHERE code = ?1")?
                .execute(params![code, home])?;
            Ok(Some(home))
        }))
    }

    fn heartbeat<'a>(
        &'a self,
        me: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Beat> {
        let now = Instant::now();
        let mut live = lock(&self.live);
        let beat = match live.beats.get(me) {
            Some((previous, until)) if *until > now => {
                if previous == token {
                    Beat::Continued
                } else {
                    Beat::Shared
                }
            }
            _ => Beat::Lapsed,
        };
        live.beats
            .insert(me.to_owned(), (token.to_owned(), now + ttl));
        Box::pin(async move { Ok(beat) })
    }

    fn retire<'a>(&'a self, me: &'a str) -> StoreFuture<'a, ()> {
        lock(&self.live).beats.remove(me);
        Box::pin(async { Ok(()) })
    }

    fn is_alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool> {
        let alive = lock(&self.live).alive(instance, Instant::now());
        Box::pin(async move { Ok(alive) })
    }

    fn mark_unready<'a>(&'a self, me: &'a str, unready: bool) -> StoreFuture<'a, ()> {
        let mut live = lock(&self.live);
        if unready {
            live.unready
                .insert(me.to_owned(), Instant::now() + UNREADY_AT_MOST);
        } else {
            live.unready.remove(me);
        }
        Box::pin(async { Ok(()) })
    }

    fn up<'a>(&'a self, instances: &'a [String]) -> StoreFuture<'a, Vec<bool>> {
        let now = Instant::now();
        let live = lock(&self.live);
        let up = instances
            .iter()
            .map(|i| live.alive(i, now) && live.unready.get(i).is_none_or(|until| *until <= now))
            .collect();
        Box::pin(async move { Ok(up) })
    }

    fn orphans<'a>(&'a self, me: &'a str, limit: usize) -> StoreFuture<'a, Vec<Orphan>> {
        let me = me.to_owned();
        let cursor = lock(&self.live).own_cursor.clone();
        Box::pin(async move {
            let (found, next) = self
                .db
                .call(move |t| {
                    let now = int(t.now);
                    let limit = int(limit as u64);
                    let mut found = Vec::new();
                    // Rooms of other instances: none can be running (the
                    // lock), so every one is a dead owner's.
                    let mut others = t.conn.prepare_cached(
                        "SELECT code, owner FROM rooms WHERE open = 1 AND owner IS NOT NULL
                         AND owner != ?1 AND (expires_at IS NULL OR expires_at > ?2) LIMIT ?3",
                    )?;
                    for row in others.query_map(params![me, now, limit], |r| {
                        Ok(Orphan {
                            code: r.get(0)?,
                            dead_owner: r.get(1)?,
                        })
                    })? {
                        found.push(row?);
                    }
                    // Released to anyone (parked rooms wait to be asked for).
                    let mut released = t.conn.prepare_cached(
                        "SELECT code FROM rooms WHERE open = 1 AND owner IS NULL AND parked = 0
                         AND (expires_at IS NULL OR expires_at > ?1) LIMIT ?2",
                    )?;
                    for code in released.query_map(params![now, limit], |r| r.get(0))? {
                        found.push(Orphan {
                            code: code?,
                            dead_owner: None,
                        });
                    }
                    // This instance's own, a window at a time, round the list.
                    let mut own = t.conn.prepare_cached(
                        "SELECT code FROM rooms WHERE open = 1 AND owner = ?1 AND code > ?2
                         AND (expires_at IS NULL OR expires_at > ?3) ORDER BY code LIMIT ?4",
                    )?;
                    let codes: Vec<String> = own
                        .query_map(params![me, cursor, now, limit], |r| r.get(0))?
                        .collect::<Result<_, _>>()?;
                    let next = if (codes.len() as i64) < limit {
                        String::new()
                    } else {
                        codes.last().cloned().unwrap_or_default()
                    };
                    found.extend(codes.into_iter().map(|code| Orphan {
                        code,
                        dead_owner: Some(me.clone()),
                    }));
                    Ok((found, next))
                })
                .await?;
            lock(&self.live).own_cursor = next;
            Ok(found)
        })
    }

    fn forget_orphan<'a>(&'a self, _orphan: &'a Orphan) -> StoreFuture<'a, ()> {
        // The lists are read from the fences themselves: nothing to forget.
        Box::pin(async { Ok(()) })
    }

    fn ask_handover<'a>(
        &'a self,
        _owner: &'a str,
        _code: &'a str,
        _to: &'a str,
    ) -> StoreFuture<'a, ()> {
        // One instance: nobody to ask.
        Box::pin(async { Ok(()) })
    }

    fn handover_requests(&self, _me: &str) -> mpsc::Receiver<String> {
        // Nobody else can ask: a channel whose sender is gone.
        mpsc::channel(1).1
    }
}
