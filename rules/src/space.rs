//! Space Mode: American checkers with wormholes and thruster boosts, as its
//! own game type over the engine's [`Position`] and [`Square`].
//!
//! The bitboard move generator is not involved: Space Mode has its own simple
//! mailbox generator, which is not speed-critical.
//!
//! Rules on top of American checkers (men step and capture forward only,
//! short kings, free capture choice, crowning ends the move, threefold
//! repetition and 80 plies without capture or man move draw):
//!
//! - **Wormholes.** A new game links two dark squares, one on each middle
//!   row (internal ranks 3 and 4). After every Light move (once both sides
//!   have moved) they relocate to two random empty dark squares anywhere;
//!   they stay put during capture chains and never move or capture pieces.
//!   A piece that lands on either end (a quiet step, a boost, or a landing
//!   during a capture) teleports to the other end if that square is empty at
//!   that moment (the mover's origin counts as empty, pieces captured earlier
//!   in the chain still block); otherwise it stays at the entrance. Each step
//!   teleports at most once. A capture chain continues from the exit square,
//!   and crowning is checked on the square where the step finally ends.
//! - **Thruster boosts.** Each side has three charges. A boost hops a piece
//!   over one adjacent friendly piece onto the empty square just beyond (men
//!   forward only, kings any direction), spends one charge and ends the turn.
//!   No boost while a capture is available.
//! - **Randomness** comes from a per-game seed (splitmix64), so the same seed
//!   and moves give the same wormholes. The RNG state is part of the game
//!   state and is restored by [`SpaceGame::undo`].
//!
//! Repetition compares the whole visible state: pieces, side to move,
//! wormholes and charges.
//!
//! Over 700 lines: move generation, the wormholes' generator and undo share one
//! private state type.

use std::collections::HashSet;

use super::bitboard::{Bitboard, Direction, Square};
use super::game::{DrawReason, Outcome};
use super::position::{Color, Position, Role, Setup, SetupError};
use super::variant::RuleSet;

/// Charges each side starts with.
pub const BOOSTS: u8 = 3;
/// Plies without capture or man move that draw (American).
pub const NO_PROGRESS_DRAW_PLIES: u32 = 80;

/// A Space Mode move.
///
/// `path` is the origin, then every landing square as the player clicks it
/// (a wormhole entrance, not its exit); the piece ends on [`SpaceMove::to`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpaceMove {
    pub path: Vec<Square>,
    /// Captured squares in capture order.
    pub captured: Vec<Square>,
    /// A thruster boost (spends one charge).
    pub boost: bool,
    /// Every wormhole jump made, as (entrance, exit), in order.
    pub teleports: Vec<(Square, Square)>,
    /// A man is crowned by this move.
    pub crowns: bool,
}

impl SpaceMove {
    pub fn from(&self) -> Square {
        self.path[0]
    }

    /// The square the piece ends on, after any wormhole jump.
    pub fn to(&self) -> Square {
        let last = *self.path.last().expect("a move has a path");
        // Within one move an entrance either always teleports or never does
        // (the exit's occupancy by other pieces does not change), so a
        // teleport from the last landing square means the last step teleported.
        self.teleports
            .iter()
            .rev()
            .find(|(entrance, _)| *entrance == last)
            .map_or(last, |(_, exit)| *exit)
    }

    fn captured_bb(&self) -> Bitboard {
        self.captured.iter().copied().collect()
    }

    /// Two moves with the same key have the same result.
    fn result_key(&self) -> (Square, Square, Bitboard, bool) {
        (self.from(), self.to(), self.captured_bb(), self.boost)
    }
}

/// Why a move, a setup or a replay was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpaceError {
    #[error("the game is over")]
    GameOver,
    #[error("a move needs at least two squares")]
    EmptyPath,
    #[error("there is no piece on {0:?}")]
    EmptySquare(Square),
    #[error("the piece on {0:?} is not yours")]
    NotYourPiece(Square),
    #[error("a capture is mandatory")]
    CaptureMandatory,
    #[error("the capture is not finished: the piece can jump again")]
    CaptureNotFinished,
    #[error("no thruster charges left")]
    NoBoostsLeft,
    #[error("not a legal move")]
    IllegalMove,
    #[error("several captures go from {0:?} to {1:?}: send the whole path")]
    AmbiguousEnds(Square, Square),
    #[error("wormholes must be two different dark squares")]
    InvalidWormholes,
    #[error("a side has at most {BOOSTS} boosts")]
    InvalidBoosts,
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("move {ply} of the replay was refused: {error}")]
    Replay { ply: usize, error: Box<SpaceError> },
}

/// splitmix64: small, fast, and fully determined by its 64-bit state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Everything that determines the legal moves and the future wormholes.
///
/// Public so the bots can search without [`SpaceGame`]'s history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct State {
    position: Position,
    wormholes: [Square; 2],
    boosts: [u8; 2],
    rng: Rng,
}

impl State {
    /// The state after `m` as a player can foresee it. Where the wormholes
    /// go after a round is drawn at random and cannot be known in advance,
    /// so once they would move they are put on two squares no piece can
    /// reach (light squares): beyond that point the foresight has no
    /// wormholes at all rather than the game's real, secret next draw.
    pub fn after_foreseen(&self, m: &SpaceMove) -> State {
        let next = self.after(m);
        if self.position.turn() != Color::Light {
            // Only Light's move ends a round and moves the wormholes.
            return next;
        }
        let mut unreachable = (0..64u8).map(Square::new).filter(|sq| !sq.is_playable());
        let wormholes = [
            unreachable.next().expect("a board has light squares"),
            unreachable.next().expect("a board has light squares"),
        ];
        State { wormholes, ..next }
    }

    /// The wormholes of a new game: one on internal rank 3, one on rank 4,
    /// each uniform among that row's four dark squares, in that order.
    fn initial(seed: u64) -> State {
        let mut rng = Rng(seed);
        let row = |rng: &mut Rng, rank: u8| {
            let squares: Vec<Square> = (Bitboard::ranks(rank, rank + 1) & Bitboard::PLAYABLE)
                .into_iter()
                .collect();
            squares[rng.below(squares.len())]
        };
        let a = row(&mut rng, 3);
        let b = row(&mut rng, 4);
        State {
            position: Position::start(RuleSet::American),
            wormholes: [a, b],
            boosts: [BOOSTS; 2],
            rng,
        }
    }

    /// Moves the wormholes: the empty dark squares in index order, pick one
    /// uniformly, remove it, pick the second among the rest.
    fn relocate(&mut self) {
        let mut empty: Vec<Square> = (Bitboard::PLAYABLE & !self.position.occupied())
            .into_iter()
            .collect();
        let a = empty.remove(self.rng.below(empty.len()));
        let b = empty.remove(self.rng.below(empty.len()));
        self.wormholes = [a, b];
    }

    fn other_end(&self, sq: Square) -> Option<Square> {
        match self.wormholes {
            [a, b] if a == sq => Some(b),
            [a, b] if b == sq => Some(a),
            _ => None,
        }
    }

    pub fn position(&self) -> &Position {
        &self.position
    }

    pub fn boosts(&self) -> [u8; 2] {
        self.boosts
    }

    /// What repetition compares: everything visible, not the RNG.
    pub fn repetition_key(&self) -> (Position, [Square; 2], [u8; 2]) {
        (self.position, self.wormholes, self.boosts)
    }

    /// The state after `m`, which must be legal here, wormholes relocated
    /// when Light moved.
    pub fn after(&self, m: &SpaceMove) -> State {
        let setup = self.position.to_setup();
        let us = setup.turn.index();
        let from = m.from().bb();
        let to = m.to().bb();
        let captured = m.captured_bb();
        let was_king = setup.kings.contains(m.from());
        let mut by_color = setup.by_color;
        by_color[us] = (by_color[us] & !from) | to;
        by_color[1 - us] &= !captured;
        let mut kings = setup.kings & !(from | captured);
        if was_king || m.crowns {
            kings |= to;
        }
        let position = Position::from_setup(Setup {
            by_color,
            kings,
            turn: setup.turn.opposite(),
        })
        .expect("a legal move leads to a valid position");
        let mut next = State { position, ..*self };
        if m.boost {
            next.boosts[us] -= 1;
        }
        if setup.turn == Color::Light {
            next.relocate();
        }
        next
    }

    /// Every legal move path (not deduplicated).
    fn all_moves(&self) -> Vec<SpaceMove> {
        let board = Board::new(&self.position);
        let turn = self.position.turn();
        let mut out = Vec::new();
        for from in self.position.pieces(turn) {
            let role = board.role(from);
            let mut chain = Chain {
                board: &board,
                state: self,
                from,
                role,
                turn,
                out: &mut out,
            };
            chain.extend(from, &mut Vec::new(), &mut Vec::new(), &mut Vec::new());
        }
        if !out.is_empty() {
            return out;
        }
        let boosts = self.boosts[turn.index()] > 0;
        for from in self.position.pieces(turn) {
            let role = board.role(from);
            for &dir in directions(turn, role) {
                let Some(next) = from.offset(dir) else {
                    continue;
                };
                if board.get(next).is_none() {
                    out.push(self.landing(&board, from, role, next, false, turn));
                } else if boosts
                    && board.color(next) == Some(turn)
                    && let Some(to) = next.offset(dir)
                    && board.get(to).is_none()
                {
                    out.push(self.landing(&board, from, role, to, true, turn));
                }
            }
        }
        out
    }

    /// A one-step non-capturing move (a step or a boost) landing on `to`.
    fn landing(
        &self,
        board: &Board,
        from: Square,
        role: Role,
        to: Square,
        boost: bool,
        turn: Color,
    ) -> SpaceMove {
        let mut teleports = Vec::new();
        let mut end = to;
        if let Some(exit) = self.other_end(to)
            && (exit == from || board.get(exit).is_none())
        {
            teleports.push((to, exit));
            end = exit;
        }
        SpaceMove {
            path: vec![from, to],
            captured: Vec::new(),
            boost,
            teleports,
            crowns: role == Role::Man && turn.far_rank().contains(end),
        }
    }

    /// Legal moves, one per distinct result.
    pub fn legal_moves(&self) -> Vec<SpaceMove> {
        let mut seen = HashSet::new();
        let mut moves = self.all_moves();
        moves.retain(|m| seen.insert(m.result_key()));
        moves
    }

    fn perft(&self, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let moves = self.legal_moves();
        if depth == 1 {
            return moves.len() as u64;
        }
        moves.iter().map(|m| self.after(m).perft(depth - 1)).sum()
    }
}

/// The board as a mailbox, for the move generator.
struct Board([Option<(Color, Role)>; 64]);

impl Board {
    fn new(position: &Position) -> Board {
        let mut squares = [None; 64];
        for sq in position.occupied() {
            squares[sq.index()] = position.piece_at(sq);
        }
        Board(squares)
    }

    fn get(&self, sq: Square) -> Option<(Color, Role)> {
        self.0[sq.index()]
    }

    fn color(&self, sq: Square) -> Option<Color> {
        self.get(sq).map(|(c, _)| c)
    }

    fn role(&self, sq: Square) -> Role {
        self.get(sq).map_or(Role::Man, |(_, r)| r)
    }
}

fn directions(turn: Color, role: Role) -> &'static [Direction] {
    match (role, turn) {
        (Role::King, _) => &Direction::ALL,
        (Role::Man, Color::Dark) => &Direction::NORTH,
        (Role::Man, Color::Light) => &Direction::SOUTH,
    }
}

/// A capture search for one piece.
struct Chain<'a> {
    board: &'a Board,
    state: &'a State,
    from: Square,
    role: Role,
    turn: Color,
    out: &'a mut Vec<SpaceMove>,
}

impl Chain<'_> {
    /// Whether `sq` is empty with the mover lifted off its origin; captured
    /// pieces stay on the board until the move ends.
    fn empty(&self, sq: Square) -> bool {
        sq == self.from || self.board.get(sq).is_none()
    }

    fn extend(
        &mut self,
        at: Square,
        path: &mut Vec<Square>,
        captured: &mut Vec<Square>,
        teleports: &mut Vec<(Square, Square)>,
    ) {
        let mut jumped = false;
        for &dir in directions(self.turn, self.role) {
            let Some(victim) = at.offset(dir) else {
                continue;
            };
            let Some(land) = victim.offset(dir) else {
                continue;
            };
            if self.board.color(victim) != Some(self.turn.opposite())
                || captured.contains(&victim)
                || !self.empty(land)
            {
                continue;
            }
            jumped = true;
            let mut end = land;
            let mut teleported = false;
            if let Some(exit) = self.state.other_end(land)
                && self.empty(exit)
            {
                end = exit;
                teleported = true;
                teleports.push((land, exit));
            }
            if path.is_empty() {
                path.push(self.from);
            }
            path.push(land);
            captured.push(victim);
            if self.role == Role::Man && self.turn.far_rank().contains(end) {
                self.record(path, captured, teleports, true);
            } else {
                self.extend(end, path, captured, teleports);
            }
            captured.pop();
            path.pop();
            if teleported {
                teleports.pop();
            }
        }
        if !jumped && !captured.is_empty() {
            self.record(path, captured, teleports, false);
        }
    }

    fn record(
        &mut self,
        path: &[Square],
        captured: &[Square],
        teleports: &[(Square, Square)],
        crowns: bool,
    ) {
        self.out.push(SpaceMove {
            path: path.to_vec(),
            captured: captured.to_vec(),
            boost: false,
            teleports: teleports.to_vec(),
            crowns,
        });
    }
}

/// One node of the game's history.
#[derive(Clone, Debug)]
struct Node {
    state: State,
    /// Plies since the last capture or man move.
    quiet_plies: u32,
}

/// A Space Mode game: state, history (for undo and the draw rules), legal
/// moves and outcome. Refused moves leave it unchanged.
#[derive(Clone, Debug)]
pub struct SpaceGame {
    seed: u64,
    /// Every state so far, the current one last.
    nodes: Vec<Node>,
    moves: Vec<SpaceMove>,
    legal: Vec<SpaceMove>,
    outcome: Option<Outcome>,
}

impl SpaceGame {
    /// A new game from the American start position.
    pub fn new(seed: u64) -> SpaceGame {
        SpaceGame::from_state(seed, State::initial(seed))
    }

    /// A game from any position, for tests and analysis. The RNG starts
    /// from `seed`; the wormholes and charges are as given.
    #[doc(hidden)]
    pub fn from_parts(
        position: Position,
        wormholes: [Square; 2],
        boosts: [u8; 2],
        seed: u64,
    ) -> Result<SpaceGame, SpaceError> {
        let [a, b] = wormholes;
        if a == b || !a.is_playable() || !b.is_playable() {
            return Err(SpaceError::InvalidWormholes);
        }
        if boosts.iter().any(|&n| n > BOOSTS) {
            return Err(SpaceError::InvalidBoosts);
        }
        Ok(SpaceGame::from_state(
            seed,
            State {
                position,
                wormholes,
                boosts,
                rng: Rng(seed),
            },
        ))
    }

    fn from_state(seed: u64, state: State) -> SpaceGame {
        let mut game = SpaceGame {
            seed,
            nodes: vec![Node {
                state,
                quiet_plies: 0,
            }],
            moves: Vec::new(),
            legal: Vec::new(),
            outcome: None,
        };
        game.refresh();
        game
    }

    /// Replays `paths` (as for [`SpaceGame::play_path`]) from a new game.
    pub fn replay(seed: u64, paths: &[Vec<Square>]) -> Result<SpaceGame, SpaceError> {
        let mut game = SpaceGame::new(seed);
        for (ply, path) in paths.iter().enumerate() {
            game.play_path(path).map_err(|error| SpaceError::Replay {
                ply,
                error: Box::new(error),
            })?;
        }
        Ok(game)
    }

    fn current(&self) -> &Node {
        self.nodes.last().expect("a game has a current state")
    }

    /// The current state, for the bots' search.
    pub fn state(&self) -> State {
        self.current().state
    }

    /// Plies since the last capture or man move.
    pub fn quiet_plies(&self) -> u32 {
        self.current().quiet_plies
    }

    /// The states since the last capture or man move, current last: the
    /// only ones that can repeat.
    pub fn reversible_states(&self) -> impl Iterator<Item = &State> {
        let keep = self.current().quiet_plies as usize + 1;
        self.nodes[self.nodes.len().saturating_sub(keep)..]
            .iter()
            .map(|n| &n.state)
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn position(&self) -> &Position {
        &self.current().state.position
    }

    pub fn turn(&self) -> Color {
        self.position().turn()
    }

    pub fn wormholes(&self) -> [Square; 2] {
        self.current().state.wormholes
    }

    pub fn boosts_left(&self, color: Color) -> u8 {
        self.current().state.boosts[color.index()]
    }

    /// Moves played so far.
    pub fn moves(&self) -> &[SpaceMove] {
        &self.moves
    }

    /// Legal moves, one per distinct result (empty once the game is over).
    pub fn legal_moves(&self) -> Vec<SpaceMove> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        self.legal.clone()
    }

    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Plays `m`, matched by its path and boost flag.
    pub fn play(&mut self, m: &SpaceMove) -> Result<(), SpaceError> {
        let found = self.find(&m.path, Some(m.boost))?;
        self.apply(found);
        Ok(())
    }

    /// Plays the move with this path (origin, then each landing square as
    /// clicked: a wormhole's entrance, not its exit) and returns it.
    pub fn play_path(&mut self, path: &[Square]) -> Result<SpaceMove, SpaceError> {
        let found = self.find(path, None)?;
        self.apply(found.clone());
        Ok(found)
    }

    /// Takes back the last move, restoring pieces, wormholes, charges and
    /// the RNG. False when there is nothing to undo.
    pub fn undo(&mut self) -> bool {
        if self.nodes.len() < 2 {
            return false;
        }
        self.nodes.pop();
        self.moves.pop();
        self.refresh();
        true
    }

    /// Leaf count `depth` plies below the current state, with distinct
    /// results as moves and wormholes relocating by the RNG on each branch.
    /// Draw rules are ignored.
    pub fn perft(&self, depth: u32) -> u64 {
        self.current().state.perft(depth)
    }

    /// How many times the current state has stood on the board.
    pub fn repetitions(&self) -> usize {
        let node = self.current();
        let key = (node.state.position, node.state.wormholes, node.state.boosts);
        let window = node.quiet_plies as usize + 1;
        self.nodes
            .iter()
            .rev()
            .take(window)
            .filter(|n| (n.state.position, n.state.wormholes, n.state.boosts) == key)
            .count()
    }

    fn find(&self, path: &[Square], boost: Option<bool>) -> Result<SpaceMove, SpaceError> {
        if self.outcome.is_some() {
            return Err(SpaceError::GameOver);
        }
        if path.len() < 2 {
            return Err(SpaceError::EmptyPath);
        }
        let moves = self.current().state.all_moves();
        let fits = |m: &&SpaceMove| boost.is_none_or(|b| b == m.boost);
        if let Some(m) = moves.iter().filter(fits).find(|m| m.path == path) {
            return Ok(m.clone());
        }
        // Two squares also name a capture by its ends (as in draughts), when
        // exactly one capture has them: a loop that ends where it began, say.
        if let [from, to] = path {
            let mut by_ends = moves.iter().filter(fits).filter(|m| {
                m.path.len() > 2 && m.path.first() == Some(from) && m.path.last() == Some(to)
            });
            match (by_ends.next(), by_ends.next()) {
                (Some(m), None) => return Ok(m.clone()),
                (Some(_), Some(_)) => return Err(SpaceError::AmbiguousEnds(*from, *to)),
                _ => {}
            }
        }
        Err(self.diagnose(path))
    }

    fn diagnose(&self, path: &[Square]) -> SpaceError {
        let state = &self.current().state;
        let from = path[0];
        match state.position.piece_at(from) {
            None => return SpaceError::EmptySquare(from),
            Some((color, _)) if color != state.position.turn() => {
                return SpaceError::NotYourPiece(from);
            }
            _ => {}
        }
        let moves = state.all_moves();
        if moves.iter().any(|m| !m.captured.is_empty()) {
            if moves
                .iter()
                .any(|m| m.path.len() > path.len() && m.path.starts_with(path))
            {
                return SpaceError::CaptureNotFinished;
            }
            return SpaceError::CaptureMandatory;
        }
        if state.boosts[state.position.turn().index()] == 0 && path.len() == 2 {
            let with_charge = State {
                boosts: [BOOSTS; 2],
                ..*state
            };
            if with_charge
                .all_moves()
                .iter()
                .any(|m| m.boost && m.path == path)
            {
                return SpaceError::NoBoostsLeft;
            }
        }
        SpaceError::IllegalMove
    }

    fn apply(&mut self, m: SpaceMove) {
        let node = self.current();
        let by_man = !node.state.position.kings().contains(m.from());
        let quiet_plies = if by_man || !m.captured.is_empty() {
            0
        } else {
            node.quiet_plies + 1
        };
        let state = node.state.after(&m);
        self.nodes.push(Node { state, quiet_plies });
        self.moves.push(m);
        self.refresh();
    }

    fn refresh(&mut self) {
        let node = self.current();
        let state = node.state;
        let quiet_plies = node.quiet_plies;
        self.legal = state.legal_moves();
        self.outcome = Outcome::judge(
            state.position.turn(),
            !state.position.pieces(state.position.turn()).is_empty(),
            !self.legal.is_empty(),
            self.repetitions(),
            (quiet_plies >= NO_PROGRESS_DRAW_PLIES).then_some(DrawReason::NoProgress),
        );
    }
}
