//! The embedded leaderboards: [`crate::leaderboard`]'s boards (win 3, draw
//! 1, loss 0; each game counted once, its id an idempotency key of the
//! `seen` family `boards`), each player's line a row of `board_lines`, and
//! pages read by rank in O(log n + page).
//!
//! ## Reading by rank
//!
//! SQLite has no rank index: `ORDER BY … LIMIT ? OFFSET ?` steps through
//! every row before the offset, so the last page of a large board costs
//! the whole board. Instead each board's order is kept in memory, in an
//! order-statistic tree ([`Ranked`]: a treap whose nodes count their
//! subtrees) of the players' [`PlaceKey`]s, whose bytes sort in the full
//! tie order: a page is the tree's keys from rank `first`, found by
//! descending on the counts, O(log n + page), and the total is the root's
//! count. The table is the truth and the tree a cache of it: a board's
//! tree is built from its rows on the first page read after the store
//! opens (the keys sorted, then a balanced tree: O(n log n), once), and
//! kept up by every game recorded. Measured on a 200,000-player board
//! (`measure_pages_by_rank`): the tree built in 0.4 s; any page about
//! 0.1 ms, the database thread's round trip included, where `OFFSET`
//! takes 7 ms at page 1,000 and 15 ms at page 2,000 and grows with the
//! board. The trees take memory like Redis's sorted sets: about a hundred
//! bytes per player.
//!
//! The embedded store is one process (the directory's lock), and every
//! job runs on the database thread, so the tree is read and written in the
//! jobs' order. What could part the two is a job or a group rolled back
//! after the tree was changed (the disk refused the commit). So each board
//! has a version in `board_versions`, counted up in the transaction of
//! every game recorded, and its tree knows the version it shows: a record
//! changes the tree only if it shows the version just before, and a page
//! read that finds the tree showing anything but the stored version (or
//! marked unknown by a record) builds it again from the rows first. A
//! rolled-back change leaves the tree ahead of the table, or marked, so
//! it is never trusted again; several handles on one file stay right too
//! (each one's tree falls behind the version and is rebuilt).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::{OptionalExtension, params};

use super::db::{Db, Tx};
use super::seen;
use crate::idempotency::IdempotencyWindow;
use crate::leaderboard::{Leaderboards, Page, PageEntry, PlaceKey, RankedOutcome, Standing};
use crate::sync::lock;
use crate::{StoreError, StoreFuture};

/// The idempotency keys' family in the `seen` table.
const FAMILY: &str = "boards";

pub(super) const TABLES: &str = "
CREATE TABLE board_lines (
  rule_set TEXT NOT NULL,
  account TEXT NOT NULL,
  name TEXT NOT NULL,
  points INTEGER NOT NULL,
  wins INTEGER NOT NULL,
  draws INTEGER NOT NULL,
  losses INTEGER NOT NULL,
  games INTEGER NOT NULL,
  PRIMARY KEY (rule_set, account)
) WITHOUT ROWID;
CREATE TABLE board_versions (
  rule_set TEXT PRIMARY KEY,
  version INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Nothing of the boards expires (their keys are forgotten as they are
/// written: [`seen::admit`]).
pub(super) fn purge(_t: &Tx<'_>) -> rusqlite::Result<()> {
    Ok(())
}

/// A board's order as this handle knows it.
#[derive(Default)]
struct Board {
    /// The stored version the tree shows; `None`: unknown (build again).
    version: Option<i64>,
    order: Ranked,
}

/// Leaderboards in the data file.
#[derive(Clone)]
pub struct EmbeddedLeaderboards {
    db: Db,
    window: IdempotencyWindow,
    /// Each board's order, by rule set (read and written on the database
    /// thread only, inside jobs).
    boards: Arc<Mutex<HashMap<String, Board>>>,
}

impl std::fmt::Debug for EmbeddedLeaderboards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EmbeddedLeaderboards({:?})", self.db)
    }
}

impl EmbeddedLeaderboards {
    /// The leaderboards on an open data file (shared with the rest of the
    /// embedded store).
    pub fn on(db: Db, window: IdempotencyWindow) -> EmbeddedLeaderboards {
        EmbeddedLeaderboards {
            db,
            window,
            boards: Arc::default(),
        }
    }
}

/// A stored count as a `u32` (never negative, never past `u32::MAX`).
fn count(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

fn read_line(r: &rusqlite::Row<'_>) -> rusqlite::Result<Standing> {
    Ok(Standing {
        name: r.get(0)?,
        points: count(r.get(1)?),
        wins: count(r.get(2)?),
        draws: count(r.get(3)?),
        losses: count(r.get(4)?),
        games: count(r.get(5)?),
    })
}

/// [`Standing`]'s scoring (win 3, draw 1, loss 0), as the memory boards
/// and the Redis script count.
fn add(s: &mut Standing, outcome: RankedOutcome) {
    s.games += 1;
    match outcome {
        RankedOutcome::Win => {
            s.wins += 1;
            s.points += 3;
        }
        RankedOutcome::Draw => {
            s.draws += 1;
            s.points += 1;
        }
        RankedOutcome::Loss => s.losses += 1,
    }
}

fn stored_version(t: &Tx<'_>, rule_set: &str) -> rusqlite::Result<i64> {
    Ok(t.conn
        .prepare_cached("SELECT version FROM board_versions WHERE rule_set = ?1")?
        .query_row(params![rule_set], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// One ranked game's result for one player, as recorded.
struct Game {
    game: String,
    rule_set: String,
    account: String,
    name: String,
    outcome: RankedOutcome,
    decided: u64,
}

/// The record job: counts the game once (the line and the version in the
/// transaction, then the tree if it follows).
fn record(
    t: &Tx<'_>,
    window: IdempotencyWindow,
    boards: &Mutex<HashMap<String, Board>>,
    g: &Game,
) -> rusqlite::Result<Result<(), StoreError>> {
    let (game, rule_set, account) = (&*g.game, &*g.rule_set, &*g.account);
    let decided = match seen::admit(t, FAMILY, window, game, g.decided)? {
        Ok(decided) => decided,
        Err(e) => return Ok(Err(e)),
    };
    if !seen::insert(t, FAMILY, game, decided)? {
        return Ok(Ok(()));
    }
    let old = t
        .conn
        .prepare_cached(
            "SELECT name, points, wins, draws, losses, games FROM board_lines
             WHERE rule_set = ?1 AND account = ?2",
        )?
        .query_row(params![rule_set, account], read_line)
        .optional()?;
    let mut line = old.clone().unwrap_or_default();
    line.name.clone_from(&g.name);
    add(&mut line, g.outcome);
    t.conn
        .prepare_cached(
            "INSERT OR REPLACE INTO board_lines
             (rule_set, account, name, points, wins, draws, losses, games)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            rule_set,
            account,
            line.name,
            line.points,
            line.wins,
            line.draws,
            line.losses,
            line.games
        ])?;
    let version: i64 = t
        .conn
        .prepare_cached(
            "INSERT INTO board_versions (rule_set, version) VALUES (?1, 1)
             ON CONFLICT (rule_set) DO UPDATE SET version = version + 1
             RETURNING version",
        )?
        .query_row(params![rule_set], |r| r.get(0))?;
    let mut boards = lock(boards);
    let board = boards.entry(rule_set.to_owned()).or_default();
    if board.version == Some(version - 1) {
        if let Some(old) = &old {
            board.order.remove(&PlaceKey::new(old, account));
        }
        board.order.insert(PlaceKey::new(&line, account));
        board.version = Some(version);
    } else {
        board.version = None;
    }
    Ok(Ok(()))
}

/// [`crate::leaderboard`]'s page bounds: `page` from 1, `per_page` 1 to
/// 100, and the 0-based rank of the page's first line.
fn page_bounds(page: u32, per_page: u32) -> (u32, u32, u64) {
    let per_page = per_page.clamp(1, 100);
    let page = page.max(1);
    (page, per_page, u64::from(page - 1) * u64::from(per_page))
}

/// The page job: builds the board's tree again if it does not show the
/// stored version, then reads the page by rank.
fn page(
    t: &Tx<'_>,
    boards: &Mutex<HashMap<String, Board>>,
    rule_set: &str,
    page: u32,
    per_page: u32,
) -> rusqlite::Result<Page> {
    let version = stored_version(t, rule_set)?;
    let mut boards = lock(boards);
    let board = boards.entry(rule_set.to_owned()).or_default();
    if board.version != Some(version) {
        let mut keys = Vec::new();
        let mut lines = t.conn.prepare_cached(
            "SELECT name, points, wins, draws, losses, games, account FROM board_lines
             WHERE rule_set = ?1",
        )?;
        let mut rows = lines.query(params![rule_set])?;
        while let Some(row) = rows.next()? {
            let account: String = row.get(6)?;
            keys.push(PlaceKey::new(&read_line(row)?, &account));
        }
        *board = Board {
            version: Some(version),
            order: Ranked::from(keys),
        };
    }
    let (page, per_page, first) = page_bounds(page, per_page);
    let first_rank = usize::try_from(first).unwrap_or(usize::MAX);
    let entries = board
        .order
        .range(first_rank, per_page as usize)
        .into_iter()
        .filter_map(|k| k.standing())
        .enumerate()
        .map(|(i, standing)| PageEntry {
            place: u32::try_from(first + i as u64 + 1).unwrap_or(u32::MAX),
            standing,
        })
        .collect();
    Ok(Page {
        rule_set: rule_set.to_owned(),
        page,
        per_page,
        total: u32::try_from(board.order.len()).unwrap_or(u32::MAX),
        entries,
    })
}

impl Leaderboards for EmbeddedLeaderboards {
    fn record<'a>(
        &'a self,
        game: &'a str,
        rule_set: &'a str,
        account: &'a str,
        name: &'a str,
        outcome: RankedOutcome,
        decided: u64,
    ) -> StoreFuture<'a, ()> {
        let (window, boards) = (self.window, self.boards.clone());
        let [game, rule_set, account, name] = [game, rule_set, account, name].map(str::to_owned);
        let game = Game {
            game,
            rule_set,
            account,
            name,
            outcome,
            decided,
        };
        Box::pin(async move {
            self.db
                .call(move |t| record(t, window, &boards, &game))
                .await?
        })
    }

    fn page<'a>(&'a self, rule_set: &'a str, page_no: u32, per_page: u32) -> StoreFuture<'a, Page> {
        let (boards, rule_set) = (self.boards.clone(), rule_set.to_owned());
        Box::pin(
            self.db
                .call(move |t| page(t, &boards, &rule_set, page_no, per_page)),
        )
    }
}

/// An order-statistic tree of place keys: a treap (a search tree by key,
/// a heap by random priority, so expected O(log n) deep whatever the order
/// of the keys) whose nodes count their subtrees, so the key at a rank is
/// found in O(log n).
#[derive(Default)]
struct Ranked {
    root: Link,
    /// The priorities' generator (xorshift64*; any fixed seed will do: the
    /// priorities only need to be independent of the keys).
    seed: u64,
}

type Link = Option<Box<Node>>;

struct Node {
    key: PlaceKey,
    priority: u64,
    size: usize,
    left: Link,
    right: Link,
}

fn size(link: &Link) -> usize {
    link.as_ref().map_or(0, |n| n.size)
}

impl Node {
    fn mend(&mut self) {
        self.size = 1 + size(&self.left) + size(&self.right);
    }
}

/// Splits a tree into the keys that `left_of` says go left and the rest
/// (`left_of` is true for a prefix of the order).
fn split(link: Link, left_of: &dyn Fn(&PlaceKey) -> bool) -> (Link, Link) {
    let Some(mut node) = link else {
        return (None, None);
    };
    if left_of(&node.key) {
        let (l, r) = split(node.right.take(), left_of);
        node.right = l;
        node.mend();
        (Some(node), r)
    } else {
        let (l, r) = split(node.left.take(), left_of);
        node.left = r;
        node.mend();
        (l, Some(node))
    }
}

/// Joins two trees, every key of `a` before every key of `b`.
fn merge(a: Link, b: Link) -> Link {
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(mut a), Some(mut b)) => {
            if a.priority >= b.priority {
                a.right = merge(a.right.take(), Some(b));
                a.mend();
                Some(a)
            } else {
                b.left = merge(Some(a), b.left.take());
                b.mend();
                Some(b)
            }
        }
    }
}

/// Appends up to `take` keys from rank `skip` of the tree to `out`,
/// stepping over whole subtrees by their counts.
fn collect(link: &Link, mut skip: usize, take: usize, out: &mut Vec<PlaceKey>) {
    let Some(node) = link else { return };
    if out.len() >= take {
        return;
    }
    let left = size(&node.left);
    if skip < left {
        collect(&node.left, skip, take, out);
        skip = 0;
    } else {
        skip -= left;
    }
    if out.len() >= take {
        return;
    }
    if skip == 0 {
        out.push(node.key.clone());
    } else {
        skip -= 1;
    }
    collect(&node.right, skip, take, out);
}

/// A balanced tree of `n` keys taken in order from `keys` (its nodes'
/// priorities are set afterwards).
fn balanced(keys: &mut impl Iterator<Item = PlaceKey>, n: usize) -> Link {
    if n == 0 {
        return None;
    }
    let left = balanced(keys, (n - 1) / 2);
    let key = keys.next()?;
    let right = balanced(keys, n - 1 - (n - 1) / 2);
    Some(Box::new(Node {
        key,
        priority: 0,
        size: n,
        left,
        right,
    }))
}

impl From<Vec<PlaceKey>> for Ranked {
    /// The tree of these keys in O(n log n) sorting and O(n) building: a
    /// balanced tree whose levels take random priorities in decreasing
    /// order (the root the highest), which is a treap like any other, so
    /// later inserts and removals keep it shallow.
    fn from(mut keys: Vec<PlaceKey>) -> Ranked {
        keys.sort_unstable();
        keys.dedup();
        let mut tree = Ranked::default();
        let mut priorities: Vec<u64> = keys.iter().map(|_| tree.priority()).collect();
        priorities.sort_unstable_by(|a, b| b.cmp(a));
        let n = keys.len();
        tree.root = balanced(&mut keys.into_iter(), n);
        let mut priorities = priorities.into_iter();
        let mut level: Vec<&mut Node> = tree.root.as_deref_mut().into_iter().collect();
        while !level.is_empty() {
            let mut below = Vec::with_capacity(level.len() * 2);
            for node in level {
                let Node {
                    priority,
                    left,
                    right,
                    ..
                } = node;
                *priority = priorities.next().unwrap_or(0);
                below.extend(left.as_deref_mut());
                below.extend(right.as_deref_mut());
            }
            level = below;
        }
        tree
    }
}

impl Ranked {
    fn len(&self) -> usize {
        size(&self.root)
    }

    fn contains(&self, key: &PlaceKey) -> bool {
        let mut link = &self.root;
        while let Some(node) = link {
            match key.cmp(&node.key) {
                std::cmp::Ordering::Less => link = &node.left,
                std::cmp::Ordering::Greater => link = &node.right,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }

    fn priority(&mut self) -> u64 {
        let mut x = self.seed ^ 0x9E37_79B9_7F4A_7C15;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.seed = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Adds `key` (a key already there stays once).
    fn insert(&mut self, key: PlaceKey) {
        if self.contains(&key) {
            return;
        }
        let (l, r) = split(self.root.take(), &|k| *k < key);
        let node = Box::new(Node {
            priority: self.priority(),
            key,
            size: 1,
            left: None,
            right: None,
        });
        self.root = merge(merge(l, Some(node)), r);
    }

    /// Takes `key` out; false if it was not there.
    fn remove(&mut self, key: &PlaceKey) -> bool {
        let (l, rest) = split(self.root.take(), &|k| k < key);
        let (found, r) = split(rest, &|k| k == key);
        self.root = merge(l, r);
        found.is_some()
    }

    /// Up to `take` keys from rank `first` (0-based), in order.
    fn range(&self, first: usize, take: usize) -> Vec<PlaceKey> {
        let mut out = Vec::with_capacity(take.min(self.len().saturating_sub(first)));
        if first < self.len() {
            collect(&self.root, first, take, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Depth of the deepest leaf (the tree stays shallow whatever the
    /// order of insertion).
    fn depth(link: &Link) -> usize {
        link.as_ref()
            .map_or(0, |n| 1 + depth(&n.left).max(depth(&n.right)))
    }

    /// Every node's priority is at least its children's, and its count is
    /// its subtree's.
    fn heap_ordered(link: &Link) -> bool {
        link.as_ref().is_none_or(|n| {
            let below = |child: &Link| child.as_ref().is_none_or(|c| c.priority <= n.priority);
            n.size == 1 + size(&n.left) + size(&n.right)
                && below(&n.left)
                && below(&n.right)
                && heap_ordered(&n.left)
                && heap_ordered(&n.right)
        })
    }

    proptest::proptest! {
        /// The tree holds what a sorted set holds, and reads every range
        /// of it by rank as the set does.
        #[test]
        fn the_tree_reads_ranks_as_a_sorted_set_does(
            built in proptest::collection::vec(0u64..60, 0..60),
            ops in proptest::collection::vec((proptest::bool::ANY, 0u64..60), 0..300),
            first in 0usize..70,
            take in 0usize..30,
        ) {
            let start: Vec<PlaceKey> = built.iter().map(|k| PlaceKey(format!("{k:03}"))).collect();
            let mut set: BTreeSet<PlaceKey> = start.iter().cloned().collect();
            let mut tree = Ranked::from(start);
            proptest::prop_assert!(heap_ordered(&tree.root));
            for (add, k) in ops {
                let k = PlaceKey(format!("{k:03}"));
                if add {
                    tree.insert(k.clone());
                    set.insert(k);
                } else {
                    proptest::prop_assert_eq!(tree.remove(&k), set.remove(&k));
                }
            }
            proptest::prop_assert_eq!(tree.len(), set.len());
            proptest::prop_assert!(heap_ordered(&tree.root));
            let want: Vec<PlaceKey> = set.iter().skip(first).take(take).cloned().collect();
            proptest::prop_assert_eq!(tree.range(first, take), want);
        }
    }

    #[test]
    fn keys_inserted_in_order_make_a_shallow_tree() {
        let mut tree = Ranked::default();
        for i in 0..100_000u64 {
            tree.insert(PlaceKey(format!("{i:08}")));
        }
        assert_eq!(tree.len(), 100_000);
        let d = depth(&tree.root);
        assert!(d < 64, "depth {d} for 100,000 keys");
        assert_eq!(
            tree.range(99_998, 10),
            [PlaceKey("00099998".into()), PlaceKey("00099999".into())]
        );
        assert!(tree.range(100_000, 10).is_empty());
        for i in (0..100_000u64).step_by(2) {
            assert!(tree.remove(&PlaceKey(format!("{i:08}"))));
        }
        assert_eq!(
            tree.range(0, 2),
            [PlaceKey("00000001".into()), PlaceKey("00000003".into())]
        );
        assert!(depth(&tree.root) < 64);
    }

    #[test]
    fn a_tree_built_from_its_keys_stays_shallow_as_it_changes() {
        let keys: Vec<PlaceKey> = (0..50_000u64)
            .map(|i| PlaceKey(format!("{:08}", i * 2)))
            .collect();
        let mut tree = Ranked::from(keys);
        assert_eq!(tree.len(), 50_000);
        assert!(heap_ordered(&tree.root));
        assert!(depth(&tree.root) <= 17, "balanced: {}", depth(&tree.root));
        // New keys all past the end, in order (a plain search tree's worst
        // case), and old ones gone.
        for i in 0..50_000u64 {
            tree.insert(PlaceKey(format!("1{i:07}")));
        }
        for i in 0..25_000u64 {
            assert!(tree.remove(&PlaceKey(format!("{:08}", i * 2))));
        }
        assert!(heap_ordered(&tree.root));
        let d = depth(&tree.root);
        assert!(d < 64, "depth {d}");
        assert_eq!(tree.range(0, 1), [PlaceKey("00050000".into())]);
    }
}
