// play.js — what the lobby room (game.js) and the solo screen (solo.js)
// share: why a game ended, the board's highlights for a selection, the
// holder of whichever board the rule set is played on, the facts a seat
// shows besides its name, and the move list whose moves show earlier
// positions. Nothing here decides the rules: legal moves, points and
// positions all come from the server.

import { BoardView } from './board.js';
import { OrbitView } from './orbit.js';
import { playMove } from './protocol.js';

const GAME_END = {
  no_pieces: 'no pieces left',
  no_moves: 'no moves left',
  resigned: 'resignation',
  timeout: 'time ran out',
  draw_agreed: 'draw agreed',
  repetition: 'repetition',
  move_limit: 'move limit',
  endgame_limit: 'endgame move limit (federation rules)',
  material_unchanged: 'no capture or crowning for too long (federation rules)',
  left: 'a player left',
  ended_by_host: 'ended by the host',
  in_a_row: 'a side has all its pieces in a row on the inner orbit',
  half_lost: 'a side lost half its pieces',
  ply_limit: 'the 200-ply limit was reached, so the board was scored as it stood',
  forfeit_claimed: 'win claimed: the side to move let the claim time pass',
  expired: 'nobody moved before the lobby expired',
};

/** Why a game ended, in words; `orbit` reads a few reasons its own way. */
export function gameEndText(ruleSet, reason) {
  if (ruleSet === 'orbit' && reason === 'no_moves') return 'neither side could move';
  return GAME_END[reason] ?? reason;
}

/** Candidate moves whose path starts with `prefix`. */
export function movesWithPrefix(moves, prefix) {
  return moves.filter((m) => prefix.every((square, i) => m.path[i] === square));
}

/**
 * One click or key on a square of an 8×8 board while a move is being
 * chosen from `moves` (`prefix`: the squares chosen so far): the squares
 * chosen after it and, when it completes a move, the move to play;
 * `cleared` when it let the piece go; `mandatory` when it named one's own
 * piece that may not move because a capture is compulsory. Pointing
 * straight at the end of a single candidate plays it.
 */
export function stepTowardsMove(moves, prefix, square, mustCapture, ownPiece) {
  const startsHere = moves.some((m) => m.path[0] === square);
  if (prefix.length === 0) {
    return startsHere ? { prefix: [square] } : { prefix: [], mandatory: mustCapture.length > 0 && ownPiece };
  }
  if (prefix.length === 1 && square === prefix[0]) return { prefix: [], cleared: true };
  const candidates = movesWithPrefix(moves, prefix);
  const next = candidates.filter((m) => m.path[prefix.length] === square);
  if (next.length > 0) {
    const longer = [...prefix, square];
    const complete = next.filter((m) => m.path.length === longer.length);
    return complete.length > 0 && complete.length === next.length ? { prefix: longer, play: complete[0] } : { prefix: longer };
  }
  const ending = candidates.filter((m) => m.path[m.path.length - 1] === square);
  if (ending.length === 1) return { prefix, play: ending[0] };
  return { prefix: startsHere ? [square] : [] };
}

/**
 * Sends the move a screen's player chose (lobby or solo): the board shows
 * its whole path while it is on its way; on refusal the choice starts over
 * (on success the new state clears it). Nothing is sent while the screen
 * takes no moves (an orbit choice pressed as the page went offline, say).
 */
export async function sendChosenMove(screen, move) {
  if (!screen.interactive) return;
  screen.sending = true;
  screen.prefix = [...move.path];
  screen.choices = [];
  screen.render();
  try {
    await screen.actions.send(playMove(move));
  } finally {
    screen.sending = false;
  }
  if (screen.state?.game?.legal_moves.includes(move)) screen.clearSelection();
}

/** The orbit points note, hidden until an orbit game shows it, placed after `anchor`. */
export function orbitNoteAfter(id, anchor) {
  const note = document.createElement('p');
  note.id = id;
  note.className = 'hint orbit-note';
  note.hidden = true;
  anchor.after(note);
  return note;
}

/**
 * Space Mode marks among candidate moves whose next square is at `depth`
 * of their path: the squares reached by a thruster boost, and the wormhole
 * exits a piece comes out of when its next square is an entrance.
 */
export function spaceMarks(candidates, depth) {
  const boosts = new Set();
  const exits = new Set();
  for (const move of candidates) {
    const next = move.path[depth];
    if (!next) continue;
    if (move.boost) boosts.add(next);
    for (const [entrance, exit] of move.teleports ?? []) if (entrance === next) exits.add(exit);
  }
  return { boosts, exits };
}

/** The squares of the last move: its path and any wormhole exits. */
function lastMoveSquares(game) {
  const move = game?.last_move;
  if (!move) return new Set();
  return new Set([...move.path, ...(move.teleports ?? []).map(([, exit]) => exit)]);
}

/** The 8×8 board's highlights for a selection `prefix` (see BoardView.render). */
export function gridMarks(game, prefix, active, interactive) {
  const empty = new Set();
  const result = {
    selected: empty, path: empty, targets: empty, captures: empty, mustCapture: empty,
    boosts: empty, exits: empty, lastMove: lastMoveSquares(game),
  };
  if (!game || !active) return result;
  if (interactive) result.mustCapture = new Set(game.must_capture);
  if (prefix.length > 0) {
    const candidates = movesWithPrefix(game.legal_moves, prefix);
    result.selected = new Set([prefix[0]]);
    result.path = new Set(prefix.slice(1));
    result.targets = new Set(candidates.map((m) => m.path[prefix.length]).filter(Boolean));
    result.captures = new Set(candidates.flatMap((m) => m.captures));
    Object.assign(result, spaceMarks(candidates, prefix.length));
  }
  return result;
}

/**
 * A board holder showing whichever board the rule set is played on: the
 * 8×8 grid or the orbit board. Only one board is ever in the page.
 */
export class BoardSlot {
  constructor(holder, handlers) {
    this.holder = holder;
    this.grid = new BoardView(holder, handlers);
    this.orbit = new OrbitView(holder, handlers);
    this.detach();
  }

  /** Puts the rule set's board in the holder and returns its view. */
  attach(ruleSet) {
    const view = ruleSet === 'orbit' ? this.orbit : this.grid;
    const other = view === this.grid ? this.orbit : this.grid;
    other.element.remove();
    if (!view.element.isConnected) this.holder.append(view.element);
    return view;
  }

  detach() {
    this.grid.element.remove();
    this.orbit.element.remove();
  }

  /**
   * Draws a game (or, with none, an empty board) with the given highlights;
   * `board` is the room's geometry for an orbit lobby that has no game yet.
   */
  render({ ruleSet, flipped, game, board, marks, choices }) {
    const view = this.attach(ruleSet);
    if (view === this.orbit) {
      view.render({ board: game?.board ?? board, flipped, pieces: game?.pieces ?? [], marks, choices });
    } else {
      view.render({ ruleSet, flipped, pieces: game?.pieces ?? [], marks, space: game?.space ?? null });
    }
  }
}

/** Extra facts shown by a seat: Space Mode charges, orbit points. */
export function seatExtras(game, color) {
  const extras = [];
  const boosts = game?.space?.boosts?.[color];
  if (boosts !== undefined) {
    const tag = document.createElement('span');
    tag.className = 'boosts';
    tag.textContent = `⚡ ${boosts} ${boosts === 1 ? 'boost' : 'boosts'} left`;
    tag.title = 'Thruster boosts left: hop over one of your own pieces';
    extras.push({ element: tag, words: `${boosts} thruster ${boosts === 1 ? 'boost' : 'boosts'} left` });
  }
  const points = (game?.result?.points ?? game?.points)?.[color];
  if (points !== undefined) {
    const tag = document.createElement('span');
    tag.className = 'points';
    const final = Boolean(game.result?.points);
    tag.textContent = `${points} ${points === 1 ? 'point' : 'points'}${final ? '' : ' now'}`;
    tag.title = final ? 'Points scored this game' : 'Points if the game ended now';
    extras.push({ element: tag, words: `${points} ${points === 1 ? 'point' : 'points'}${final ? ' this game' : ' as the board stands'}` });
  }
  return extras;
}

/** One fact of a seat's second line. */
export function fact(text, className = '') {
  const element = document.createElement('span');
  if (className) element.className = className;
  element.textContent = text;
  return element;
}

/**
 * A seat's words: the name (and "you") on one line, the facts under it,
 * wrapping rather than cut (see the end of style.css).
 */
export function seatLines(name, you, facts) {
  const who = document.createElement('span');
  who.className = 'who';
  const line = document.createElement('span');
  line.className = 'seat-line';
  line.append(name);
  if (you) line.append(' ', fact('you', 'you'));
  const second = document.createElement('span');
  second.className = 'tag facts';
  second.append(...facts);
  who.append(line, second);
  return who;
}

/** "3–1 on points" from an orbit result, Dark first unless `first` is Light. */
export function pointsScore(points, first = 'dark') {
  if (!points) return '';
  const second = first === 'dark' ? 'light' : 'dark';
  return `${points[first]}–${points[second]} on points`;
}

export function seconds(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/**
 * The positions after each ply of one game, as this page saw them (or
 * was sent them), kept for the tab's session under `storageKey` so that a
 * reload still has them. A position is `{ pieces, last_move, space, points }`.
 */
export class PositionHistory {
  constructor(storageKey) {
    this.storageKey = storageKey;
    this.plies = new Map();
    this.key = null;
    this.moves = []; // the moves of the game the positions belong to
  }

  /**
   * Follows the game known as `key` (loading what the session kept for it),
   * drops what belongs to another game (a later series' round of the same
   * number, a move taken back): every position after the first move on
   * which the kept moves and `game`'s differ. Keeps the position shown now.
   */
  follow(key, game) {
    if (this.key !== key) {
      this.plies = new Map();
      this.moves = [];
      this.key = key;
      this.load();
    }
    const moves = game.moves ?? [];
    let agree = 0;
    while (agree < this.moves.length && agree < moves.length && this.moves[agree] === moves[agree]) agree += 1;
    for (const ply of this.plies.keys()) if (ply > agree || ply > game.ply) this.plies.delete(ply);
    this.moves = [...moves];
    this.plies.set(game.ply, {
      pieces: game.pieces, last_move: game.last_move ?? null, space: game.space ?? null, points: game.points ?? null,
    });
    this.save();
  }

  /** Adds a position sent by the server, if it belongs to `game`'s moves. */
  add(ply, position, game) {
    if (!Number.isInteger(ply) || ply < 0 || ply > game.ply) return false;
    if (ply > 0 && position.last_move?.notation !== game.moves[ply - 1]) return false;
    if (!this.plies.has(ply)) this.plies.set(ply, position);
    return true;
  }

  has(ply) {
    return this.plies.has(ply);
  }

  get(ply) {
    return this.plies.get(ply);
  }

  /** The plies of `game`'s moves (1 to the live one) this page has no position for. */
  missing(game) {
    const gaps = [];
    for (let ply = 1; ply < game.ply; ply += 1) if (!this.plies.has(ply)) gaps.push(ply);
    return gaps;
  }

  clear() {
    this.plies = new Map();
    this.key = null;
    this.moves = [];
  }

  load() {
    try {
      const saved = JSON.parse(sessionStorage.getItem(this.storageKey) ?? 'null');
      if (saved?.key === this.key && Array.isArray(saved.plies) && Array.isArray(saved.moves)) {
        for (const [ply, position] of saved.plies) this.plies.set(ply, position);
        this.moves = saved.moves;
      }
    } catch {
      // A missing history only means fewer earlier positions to show.
    }
  }

  save() {
    try {
      sessionStorage.setItem(this.storageKey, JSON.stringify({ key: this.key, moves: this.moves, plies: [...this.plies] }));
    } catch {
      // Storage full: earlier positions are a nicety.
    }
  }
}

/**
 * The move list of a game: every move a button showing the position after
 * it, two moves to a row. A click, or the arrow keys, Home and End, pick a
 * ply for `onPick` (null: back to the live board). A move whose position
 * the page does not hold is shown but cannot be picked.
 */
export class MoveList {
  constructor(list, onPick) {
    this.list = list;
    this.onPick = onPick;
    this.moves = [];
    this.at = 0;
    this.held = () => false;
    list.addEventListener('click', (event) => {
      const button = event.target.closest('button[data-ply]');
      if (button && !button.disabled) onPick(Number(button.dataset.ply));
    });
    list.addEventListener('keydown', (event) => this.onKey(event));
  }

  onKey(event) {
    const live = this.moves.length;
    if (live === 0) return;
    const at = this.at;
    const seen = [];
    for (let ply = 1; ply <= live; ply += 1) if (ply === live || this.held(ply)) seen.push(ply);
    let next;
    if (event.key === 'ArrowLeft' || event.key === 'ArrowUp') next = [...seen].reverse().find((p) => p < at) ?? at;
    else if (event.key === 'ArrowRight' || event.key === 'ArrowDown') next = seen.find((p) => p > at) ?? live;
    else if (event.key === 'Home') next = seen[0] ?? at;
    else if (event.key === 'End' || event.key === 'Escape') next = live;
    else return;
    event.preventDefault();
    this.onPick(next >= live ? null : next);
  }

  /**
   * Draws `moves` with `at` (a ply) marked as the one shown; `held(ply)`
   * says whether the page has the position after that ply.
   */
  render(moves, at, held) {
    this.moves = moves;
    this.at = at;
    this.held = held;
    const list = this.list;
    const live = moves.length;
    const hadFocus = list.contains(document.activeElement);
    list.replaceChildren();
    for (let i = 0; i < live; i += 2) {
      const item = document.createElement('li');
      for (let ply = i + 1; ply <= Math.min(i + 2, live); ply += 1) {
        if (ply > i + 1) item.append(' ');
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'move';
        button.dataset.ply = String(ply);
        button.textContent = moves[ply - 1];
        const seen = ply === live || held(ply);
        button.disabled = !seen;
        if (!seen) button.title = 'This position was not seen on this page';
        if (ply === at) button.setAttribute('aria-current', 'step');
        button.tabIndex = ply === at || (at === 0 && ply === 1) ? 0 : -1;
        item.append(button);
      }
      if (i + 2 >= live) item.className = 'latest';
      list.append(item);
    }
    // Redrawn under the keyboard: the focus stays on the move shown.
    if (hadFocus) list.querySelector('button[tabindex="0"]')?.focus();
  }
}
