//! One alpha-beta search for the games without bitboards (Space Mode and
//! the orbit game): iterative deepening with principal-variation windows, a
//! transposition table, killer moves, and a forced reply searched without
//! spending depth. What differs between the games — their nodes, leaves,
//! move order and whether a move changes the side to move — is the small
//! [`Tree`] trait each implements.

use std::time::{Duration, Instant};

use super::level::Profile;
use super::rng::SplitMix64;
use super::search::{INFINITY, MATE_BOUND, score_from_table, score_to_table};
use super::table::Bound;
use super::{SearchInfo, pick_root};

/// How often (in nodes) the clock is read.
const CLOCK_EVERY: u64 = 256;

/// What the search needs to know of a game.
pub(crate) trait Tree {
    /// A position in the search, with whatever the game needs beside it.
    type Node;
    type Move;
    /// A move's identity for the killer table.
    type Key: Copy + PartialEq;
    /// The deepest ply searched.
    const MAX_PLY: usize;

    /// A first look at a node: its value if it is a leaf, else its moves
    /// now, or later (after the transposition table had its say).
    fn examine(&mut self, node: &Self::Node, depth: i32, ply: usize) -> Examined<Self::Move>;
    /// The node's moves, in the engine's own order (the table stores
    /// indices into it).
    fn moves(&self, node: &Self::Node) -> Vec<Self::Move>;
    /// The node after a move listed for it.
    fn child(&self, node: &Self::Node, m: &Self::Move) -> Self::Node;
    /// Entering a child (before its search) and leaving it (after).
    fn enter(&mut self, _child: &Self::Node) {}
    fn leave(&mut self) {}
    /// Whether the side to move changed from `parent` to `child` (the
    /// score is then negated).
    fn turn_changes(&self, parent: &Self::Node, child: &Self::Node) -> bool;
    /// The transposition key of a node.
    fn table_key(&self, node: &Self::Node) -> u64;
    fn key_of(m: &Self::Move) -> Self::Key;
    fn is_capture(m: &Self::Move) -> bool;
    /// The rank of a move that goes before the killers (captures,
    /// crowning), if it is one.
    fn urgent(m: &Self::Move) -> Option<i32>;
    /// The rank of any other move.
    fn quiet(m: &Self::Move) -> i32;
}

/// What [`Tree::examine`] found.
pub(crate) enum Examined<M> {
    /// A leaf: its value for the side to move.
    Value(i32),
    /// Not a leaf; its moves, generated already.
    Moves(Vec<M>),
    /// Not a leaf; its moves are generated after the table probe.
    Later,
}

/// The search's limits: depth, nodes and two clocks.
pub(crate) struct Limits {
    pub max_depth: u32,
    pub max_nodes: u64,
    /// The search stops here.
    pub deadline: Instant,
    /// No new iteration starts after this.
    pub soft_deadline: Instant,
    pub table_bits: u32,
}

pub(crate) struct TreeSearch<T: Tree> {
    tree: T,
    limits: Limits,
    killers: Vec<[Option<T::Key>; 2]>,
    table: Table,
    nodes: u64,
    stopped: bool,
}

impl<T: Tree> TreeSearch<T> {
    pub(crate) fn new(tree: T, limits: Limits) -> TreeSearch<T> {
        TreeSearch {
            tree,
            killers: vec![[None; 2]; T::MAX_PLY],
            table: Table::new(limits.table_bits),
            limits,
            nodes: 0,
            stopped: false,
        }
    }

    /// Picks among `legal` (at least two moves) at `root`: the best move at
    /// the strongest settings; with noise or strays, a choice made from
    /// every root move's score, seeded by `seed`.
    pub(crate) fn choose(
        &mut self,
        root: &T::Node,
        legal: &[T::Move],
        profile: &Profile,
        seed: u64,
    ) -> (usize, SearchInfo) {
        if profile.noise == 0 && profile.stray_percent == 0 {
            let (index, score, depth) = self.deepen(root, legal);
            let info = SearchInfo {
                depth,
                nodes: self.nodes,
                score,
                elapsed: Duration::ZERO,
            };
            return (index, info);
        }
        let mut rng = SplitMix64::new(seed);
        let stray = rng.chance(profile.stray_percent);
        let (scores, depth) = self.score_all(root, legal);
        let index = pick_root(&scores, legal.len(), stray, profile.noise, &mut rng);
        let info = SearchInfo {
            depth,
            nodes: self.nodes,
            score: scores.get(index).copied().unwrap_or(0),
            elapsed: Duration::ZERO,
        };
        (index, info)
    }

    fn count_node(&mut self) -> bool {
        self.nodes += 1;
        if self.nodes >= self.limits.max_nodes
            || (self.nodes.is_multiple_of(CLOCK_EVERY) && Instant::now() >= self.limits.deadline)
        {
            self.stopped = true;
        }
        self.stopped
    }

    /// A child's score from the parent's side, searched in the window
    /// `(alpha, beta)` of the parent.
    fn child_score(
        &mut self,
        parent: &T::Node,
        child: &T::Node,
        depth: i32,
        alpha: i32,
        beta: i32,
        ply: usize,
    ) -> i32 {
        if self.tree.turn_changes(parent, child) {
            -self.negamax(child, depth, -beta, -alpha, ply)
        } else {
            self.negamax(child, depth, alpha, beta, ply)
        }
    }

    /// Iterative deepening over the root moves; the previous iteration's
    /// best move is searched first. Returns the best index, its score and
    /// the depth reached.
    fn deepen(&mut self, root: &T::Node, moves: &[T::Move]) -> (usize, i32, u32) {
        let mut order: Vec<usize> = (0..moves.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.rank(&moves[i], 0)));
        let mut best = (order[0], 0, 0);
        for depth in 1..=self.limits.max_depth {
            if depth > 1 && Instant::now() >= self.limits.soft_deadline {
                break;
            }
            let d = depth as i32 - 1;
            let mut alpha = -INFINITY;
            let mut found: Option<(usize, i32)> = None;
            for (n, &i) in order.iter().enumerate() {
                let next = self.tree.child(root, &moves[i]);
                self.tree.enter(&next);
                let score = if n == 0 {
                    self.child_score(root, &next, d, alpha, INFINITY, 1)
                } else {
                    let probe = self.child_score(root, &next, d, alpha, alpha + 1, 1);
                    if probe > alpha && !self.stopped {
                        self.child_score(root, &next, d, alpha, INFINITY, 1)
                    } else {
                        probe
                    }
                };
                self.tree.leave();
                if self.stopped {
                    break;
                }
                if score > alpha {
                    alpha = score;
                    found = Some((i, score));
                }
            }
            // An interrupted iteration still searched its best move first,
            // so anything it found better is trustworthy.
            if let Some((i, score)) = found {
                best = (i, score, depth);
                order.retain(|&j| j != i);
                order.insert(0, i);
            }
            if self.stopped || alpha.abs() > MATE_BOUND {
                break;
            }
        }
        best
    }

    /// Scores every root move with a full window, one ply deeper per round;
    /// returns the scores of the deepest complete round.
    fn score_all(&mut self, root: &T::Node, moves: &[T::Move]) -> (Vec<i32>, u32) {
        let mut scores = Vec::new();
        let mut reached = 0;
        for depth in 1..=self.limits.max_depth {
            let mut these = Vec::with_capacity(moves.len());
            for m in moves {
                let next = self.tree.child(root, m);
                self.tree.enter(&next);
                let s = self.child_score(root, &next, depth as i32 - 1, -INFINITY, INFINITY, 1);
                self.tree.leave();
                if self.stopped {
                    break;
                }
                these.push(s);
            }
            if self.stopped {
                break;
            }
            scores = these;
            reached = depth;
            if Instant::now() >= self.limits.soft_deadline {
                break;
            }
        }
        (scores, reached)
    }

    fn rank(&self, m: &T::Move, ply: usize) -> i32 {
        if let Some(rank) = T::urgent(m) {
            return rank;
        }
        let killers = self.killers[ply.min(T::MAX_PLY - 1)];
        let key = T::key_of(m);
        if killers[0] == Some(key) {
            300_000
        } else if killers[1] == Some(key) {
            299_000
        } else {
            T::quiet(m)
        }
    }

    fn negamax(
        &mut self,
        node: &T::Node,
        depth: i32,
        mut alpha: i32,
        beta: i32,
        ply: usize,
    ) -> i32 {
        if self.count_node() {
            return 0;
        }
        let early = match self.tree.examine(node, depth, ply) {
            Examined::Value(v) => return v,
            Examined::Moves(moves) => Some(moves),
            Examined::Later => None,
        };
        let key = self.tree.table_key(node);
        let entry = self.table.probe(key);
        if let Some(s) = Table::cutoff(entry, depth, alpha, beta, ply) {
            return s;
        }
        let moves = early.unwrap_or_else(|| self.tree.moves(node));
        let order = Table::order(entry, moves.len(), |i| self.rank(&moves[i], ply));
        // A forced reply costs no depth (nor does anything below the
        // horizon that a game chose to follow).
        let child_depth = if moves.len() == 1 || depth <= 0 {
            depth
        } else {
            depth - 1
        };
        let alpha_in = alpha;
        let mut best = -INFINITY;
        let mut best_index = order[0].1;
        for (i, &(_, index)) in order.iter().enumerate() {
            let m = &moves[index];
            let next = self.tree.child(node, m);
            self.tree.enter(&next);
            let score = if i == 0 {
                self.child_score(node, &next, child_depth, alpha, beta, ply + 1)
            } else {
                let probe = self.child_score(node, &next, child_depth, alpha, alpha + 1, ply + 1);
                if probe > alpha && probe < beta && !self.stopped {
                    self.child_score(node, &next, child_depth, alpha, beta, ply + 1)
                } else {
                    probe
                }
            };
            self.tree.leave();
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                best_index = index;
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        if !T::is_capture(m) {
                            let slot = &mut self.killers[ply.min(T::MAX_PLY - 1)];
                            let key = T::key_of(m);
                            if slot[0] != Some(key) {
                                slot[1] = slot[0];
                                slot[0] = Some(key);
                            }
                        }
                        break;
                    }
                }
            }
        }
        self.table
            .record(key, depth, best, alpha_in, beta, best_index, ply);
        best
    }
}

/// One remembered search result; the best move is its index in the
/// position's generated move list, which is the same every time.
#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u64,
    depth: i32,
    score: i32,
    bound: Bound,
    best: u8,
}

/// A fixed-size transposition table (the draughts table remembers
/// draughts moves).
#[derive(Debug)]
struct Table {
    slots: Vec<Option<Slot>>,
    mask: usize,
}

impl Table {
    /// A table of `2^bits` slots.
    fn new(bits: u32) -> Table {
        let len = 1usize << bits;
        Table {
            slots: vec![None; len],
            mask: len - 1,
        }
    }

    fn probe(&self, key: u64) -> Option<Slot> {
        self.slots[key as usize & self.mask].filter(|e| e.key == key)
    }

    /// Keeps the deeper result for the same position; a new position takes
    /// the slot.
    fn store(&mut self, slot: Slot) {
        let old = &mut self.slots[slot.key as usize & self.mask];
        if !matches!(old, Some(o) if o.key == slot.key && o.depth > slot.depth) {
            *old = Some(slot);
        }
    }

    /// The order to search `count` moves in: the table's best move first,
    /// then by `rank`, highest first; as `(-rank, index)` pairs.
    fn order(entry: Option<Slot>, count: usize, rank: impl Fn(usize) -> i32) -> Vec<(i32, usize)> {
        let table_move = entry.map(|e| usize::from(e.best));
        let mut order: Vec<(i32, usize)> = (0..count)
            .map(|i| {
                let rank = if Some(i) == table_move {
                    1_000_000
                } else {
                    rank(i)
                };
                (-rank, i)
            })
            .collect();
        order.sort_unstable();
        order
    }

    /// A usable score for this window at this depth, if the table has one.
    fn cutoff(entry: Option<Slot>, depth: i32, alpha: i32, beta: i32, ply: usize) -> Option<i32> {
        let e = entry.filter(|e| e.depth >= depth)?;
        let s = score_from_table(e.score, ply);
        match e.bound {
            Bound::Exact => Some(s),
            Bound::Lower if s >= beta => Some(s),
            Bound::Upper if s <= alpha => Some(s),
            _ => None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        key: u64,
        depth: i32,
        best_score: i32,
        alpha_in: i32,
        beta: i32,
        best: usize,
        ply: usize,
    ) {
        let bound = if best_score >= beta {
            Bound::Lower
        } else if best_score > alpha_in {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.store(Slot {
            key,
            depth,
            score: score_to_table(best_score, ply),
            bound,
            best: u8::try_from(best).unwrap_or(u8::MAX),
        });
    }
}
