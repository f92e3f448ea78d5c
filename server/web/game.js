// game.js — the room screen: seats and clocks, series score, whose turn,
// the board with move selection, draw offers, break, results, the series
// buttons and the move list. It sends actions through `send` and never
// decides the rules: legal moves come from the server's state. The orbit
// rule set gets its own board view (orbit.js), and Space Mode its wormholes,
// boosts and thruster charges on the 8×8 board. A correspondence lobby has
// no move clock; its claim panel is pace.js's.

import { BoardView } from './board.js';
import { describeError } from './errors.js';
import { OrbitView, orbitClick, orbitMarks } from './orbit.js';
import * as msg from './protocol.js';
import { levelLabel, pieceShade, ruleSetLabel, sideName } from './protocol.js';
import { correspondenceHelp, rulesHelp } from './help.js';
import { PacePanel, isCorrespondence } from './pace.js';

const $ = (id) => document.getElementById(id);

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
function gameEndText(ruleSet, reason) {
  if (ruleSet === 'orbit' && reason === 'no_moves') return 'neither side could move';
  return GAME_END[reason] ?? reason;
}

const SERIES_END = {
  majority: 'won a majority',
  round_limit: 'round limit reached',
  resigned: 'resignation',
  left: 'a player left',
  ended_by_host: 'ended by the host',
  points: 'on total points',
  expired: 'the lobby expired with no move',
};

/** Candidate moves whose path starts with `prefix`. */
export function movesWithPrefix(moves, prefix) {
  return moves.filter((m) => prefix.every((square, i) => m.path[i] === square));
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
function gridMarks(game, prefix, active, interactive) {
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
class BoardSlot {
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
function seatExtras(game, color) {
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

/** "3–1 on points" from an orbit result, Dark first unless `first` is Light. */
function pointsScore(points, first = 'dark') {
  if (!points) return '';
  const second = first === 'dark' ? 'light' : 'dark';
  return `${points[first]}–${points[second]} on points`;
}

function seconds(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export class GameScreen {
  /**
   * @param {{ send(message): Promise, leave(): Promise, home(): void, notify(text, kind?): void }} actions
   * (`home` goes to the home page keeping the seat: for correspondence games)
   */
  constructor(actions) {
    this.actions = actions;
    this.state = null;
    this.identity = null;
    this.prefix = [];
    this.sending = false;
    this.receivedAt = 0;
    this.serverOffset = 0; // server clock minus ours, estimated from clocks
    this.choices = []; // orbit: moves sharing origin and destination, to pick from
    this.viewPly = null; // a ply of the move list being looked at, or null for the live board
    this.history = new Map(); // ply -> { pieces, last_move, space } seen for the current round
    this.historyKey = null;
    this.moveClockMs = 0; // the longest time a move was given, shown on the idle clock
    this.board = new BoardSlot($('board-holder'), {
      onActivate: (square) => this.activate(square),
      onClear: () => this.clearSelection(),
      onChoose: (move) => this.play(move),
    });

    const act = (id, build, confirmText) => {
      $(id).addEventListener('click', async () => {
        if (confirmText && !window.confirm(confirmText)) return;
        await this.actions.send(build());
      });
    };
    act('offer-draw', msg.offerDraw);
    act('accept-draw', msg.acceptDraw);
    act('decline-draw', msg.declineDraw);
    act('resign', msg.resign, 'Resign? You lose the whole series, not only this round.');
    act('next-round', msg.nextRound);
    act('rematch', msg.rematch);
    act('end-match', msg.endMatch, 'End the match for both players?');
    $('leave').addEventListener('click', () => {
      const s = this.state;
      // Leaving mid-series concedes it (PROTOCOL.md §11): ask first, as Resign does.
      if (s && this.seat >= 0 && ['playing', 'break'].includes(s.phase)
          && !window.confirm('Leave this lobby? Leaving now forfeits the whole series to your opponent.')) return;
      this.actions.leave();
    });
    $('moves').addEventListener('click', (event) => {
      const button = event.target.closest('button[data-ply]');
      if (button && !button.disabled) this.viewMove(Number(button.dataset.ply));
    });
    $('moves').addEventListener('keydown', (event) => this.onMovesKey(event));
    $('back-to-live').addEventListener('click', () => this.viewMove(null));
    $('flip-board').addEventListener('click', () => {
      this.flipOverride = !this.flipOverride;
      $('flip-board').setAttribute('aria-pressed', String(this.flipOverride));
      this.render();
    });
    this.flipOverride = false;
    this.wasMyTurn = false;
    this.pace = new PacePanel(this, (message) => this.actions.send(message));
    $('room-home').addEventListener('click', () => this.actions.home());

    setInterval(() => this.tick(), 250);
  }

  show() {
    $('room').hidden = false;
    if (this.state) this.board.attach(this.state.rule_set);
  }

  hide() {
    $('room').hidden = true;
    // One board in the page at a time: the solo screen has its own.
    this.board.detach();
    $('status').textContent = '';
    $('announce').textContent = '';
    this.state = null;
    this.prefix = [];
    this.choices = [];
    this.viewPly = null;
    this.history.clear();
    this.historyKey = null;
  }

  /**
   * Keeps the position after each ply seen, so the move list can show it
   * (kept for the tab's session, so a reload still has them).
   */
  remember(state) {
    const game = state.game;
    if (!game) return;
    const key = `${state.code}#${state.series.round}#${game.dark_seat}`;
    if (this.historyKey !== key) {
      this.history = new Map();
      this.historyKey = key;
      this.loadHistory(key);
    }
    // Drop what belongs to another game (a rematch's round of the same number).
    for (const [ply, position] of this.history) {
      const notation = position.last_move?.notation ?? null;
      if (ply > game.ply || (ply > 0 && notation !== game.moves[ply - 1])) this.history.delete(ply);
    }
    this.history.set(game.ply, { pieces: game.pieces, last_move: game.last_move ?? null, space: game.space ?? null });
    this.saveHistory();
  }

  loadHistory(key) {
    try {
      const saved = JSON.parse(sessionStorage.getItem('jumpgate.history') ?? 'null');
      if (saved?.key === key && Array.isArray(saved.plies)) {
        for (const [ply, position] of saved.plies) this.history.set(ply, position);
      }
    } catch {
      // A missing history only means fewer earlier positions to show.
    }
  }

  saveHistory() {
    try {
      sessionStorage.setItem('jumpgate.history', JSON.stringify({ key: this.historyKey, plies: [...this.history] }));
    } catch {
      // Storage full: earlier positions are a nicety.
    }
  }

  /** Shows the position after `ply` (read-only), or the live board for null. */
  viewMove(ply) {
    const live = this.state?.game?.ply ?? 0;
    this.viewPly = ply === null || ply >= live || !this.history.has(ply) ? null : ply;
    this.prefix = [];
    this.choices = [];
    this.render();
  }

  onMovesKey(event) {
    const game = this.state?.game;
    if (!game) return;
    const live = game.ply;
    const at = this.viewPly ?? live;
    const seen = [...this.history.keys()].filter((p) => p >= 1 && p <= live).sort((a, b) => a - b);
    let next = null;
    if (event.key === 'ArrowLeft' || event.key === 'ArrowUp') next = [...seen].reverse().find((p) => p < at) ?? at;
    else if (event.key === 'ArrowRight' || event.key === 'ArrowDown') next = seen.find((p) => p > at) ?? live;
    else if (event.key === 'Home') next = seen[0] ?? at;
    else if (event.key === 'End' || event.key === 'Escape') next = live;
    else return;
    event.preventDefault();
    this.viewMove(next);
  }

  get seat() {
    if (!this.state || !this.identity) return -1;
    return this.state.players.findIndex((p) => p && p.id === this.identity.id);
  }

  /** The colour this page's player has in the current game, if any. */
  get myColor() {
    const game = this.state?.game;
    if (!game || this.seat < 0) return null;
    return game.dark_seat === this.seat ? 'dark' : 'light';
  }

  get interactive() {
    return this.isMyTurn() && !this.sending && this.viewPly === null && !this.offline;
  }

  /** app.js: while the connection is down, no moves, the clock stands still here and presence is unknown. */
  setOffline(offline) {
    if (Boolean(this.offline) === offline) return;
    if (offline) this.frozenAt = performance.now();
    this.offline = offline;
    this.render();
  }

  seatOf(color) {
    const game = this.state.game;
    if (!game) return color === 'dark' ? 0 : 1;
    return color === 'dark' ? game.dark_seat : 1 - game.dark_seat;
  }

  nameOf(seat) {
    const player = this.state.players[seat];
    if (!player) return 'an empty seat';
    return seat === this.seat ? 'You' : player.name;
  }

  update(state, identity) {
    const previous = this.state;
    this.state = state;
    this.identity = identity;
    this.receivedAt = performance.now();
    const game = state.game;
    if (game && game.deadline > 0) {
      this.serverOffset = game.deadline - game.remaining_ms - Date.now();
    }
    const stillValid = game && this.prefix.length > 0 && movesWithPrefix(game.legal_moves, this.prefix).length > 0;
    if (!stillValid || previous?.game?.ply !== game?.ply) {
      this.prefix = [];
      this.choices = [];
    }
    this.sending = false;
    if (game && !game.result) this.moveClockMs = Math.max(this.moveClockMs, game.remaining_ms);
    this.remember(state);
    if (this.viewPly !== null && !this.history.has(this.viewPly)) this.viewPly = null;
    const sameRoom = previous?.code === state.code;
    this.announce(sameRoom ? previous : null);
    const mine = this.isMyTurn();
    const wasMine = sameRoom && previous.game?.ply === game?.ply && previous.series.round === state.series.round
      && previous.phase === state.phase && this.wasMyTurn;
    this.wasMyTurn = mine;
    this.actions.turn?.({ mine, fresh: mine && !wasMine && sameRoom });
    this.render();
  }

  isMyTurn() {
    const s = this.state;
    return Boolean(s && s.phase === 'playing' && s.game && !s.game.result && this.myColor === s.game.turn);
  }

  /** Says the opponent's move (and the end of a game) to screen readers. */
  announce(previous) {
    const game = this.state.game;
    if (!previous || !game) return;
    let words = '';
    if (game.ply > (previous.game?.ply ?? 0) && game.last_move && previous.game?.dark_seat === game.dark_seat) {
      const mover = game.turn === 'dark' ? 'light' : 'dark';
      if (mover !== this.myColor) {
        words = `${this.nameOf(this.seatOf(mover))} played ${game.last_move.notation}.`;
      }
    }
    if (game.result && !previous.game?.result) words = `${words} ${this.gameResultText()}`.trim();
    if (words) $('announce').textContent = words;
  }

  clearSelection() {
    this.prefix = [];
    this.choices = [];
    this.render();
  }

  activate(square) {
    if (!this.interactive) return;
    if (this.state.rule_set === 'orbit') {
      this.activateOrbit(square);
      return;
    }
    const moves = this.state.game.legal_moves;
    const startsHere = moves.some((m) => m.path[0] === square);
    if (this.prefix.length === 0) {
      if (startsHere) this.prefix = [square];
      else if (this.state.game.must_capture.length > 0 && this.ownPieceOn(square)) {
        this.actions.notify('A capture is mandatory: move one of the marked pieces.', 'info');
      }
      this.render();
      return;
    }
    if (this.prefix.length === 1 && square === this.prefix[0]) {
      this.clearSelection();
      return;
    }
    const candidates = movesWithPrefix(moves, this.prefix);
    const next = candidates.filter((m) => m.path[this.prefix.length] === square);
    if (next.length > 0) {
      this.prefix = [...this.prefix, square];
      const complete = next.filter((m) => m.path.length === this.prefix.length);
      if (complete.length > 0 && complete.length === next.length) {
        this.play(complete[0]);
      } else {
        this.render();
      }
      return;
    }
    // Pointing straight at the end of a single candidate plays it.
    const ending = candidates.filter((m) => m.path[m.path.length - 1] === square);
    if (ending.length === 1) {
      this.play(ending[0]);
      return;
    }
    this.prefix = startsHere ? [square] : [];
    this.render();
  }

  activateOrbit(square) {
    const click = orbitClick(this.state.game.legal_moves, this.prefix[0] ?? null, square);
    this.prefix = click.origin ? [click.origin] : [];
    this.choices = click.choices;
    if (click.play) this.play(click.play);
    else this.render();
  }

  ownPieceOn(square) {
    return this.state.game.pieces.some((p) => p.square === square && p.color === this.myColor);
  }

  async play(move) {
    this.sending = true;
    this.prefix = [...move.path];
    this.choices = [];
    this.render();
    try {
      await this.actions.send(msg.playMove(move));
    } finally {
      this.sending = false;
    }
    // On success the new state clears the selection; on refusal, start over.
    if (this.state?.game?.legal_moves.includes(move)) this.clearSelection();
  }

  marks() {
    const game = this.state.game;
    const active = this.interactive || this.sending;
    if (this.state.rule_set === 'orbit') return orbitMarks(game, this.prefix[0] ?? null, active);
    return gridMarks(game, this.prefix, active, this.interactive);
  }

  render() {
    const s = this.state;
    if (!s) return;
    const seat = this.seat;
    const game = s.game;
    $('room-title').textContent = `Lobby ${s.code}`;
    const orbit = s.rule_set === 'orbit';
    const series = s.series_length === 1 ? (orbit ? 'one game' : 'one game (up to 2 if drawn)')
      : orbit ? `${s.series_length} games, scored by points` : `best of ${s.series_length}`;
    const role = seat >= 0 ? (s.host === this.identity?.id ? 'You are the host' : 'You are playing') : 'You are watching';
    const options = `${isCorrespondence(s) ? ' · correspondence' : ''}${s.draw_rules === 'federation' ? ' · federation draw rules' : ''}`;
    $('room-meta').textContent = `${ruleSetLabel(s.rule_set)}${options} · ${series}${s.invite_only ? ' · invite-only' : ''} · ${s.spectators} watching · ${role}`;
    const stake = s.stake ?? 0;
    $('room-stake').hidden = !(stake > 0);
    $('room-stake').textContent = stake > 0 ? `Played for ${stake.toLocaleString('en')} Bold Points each` : '';
    const h2h = this.headToHeadText();
    $('head-to-head').hidden = !h2h;
    $('head-to-head').textContent = h2h;

    // Your own side at the bottom (before the first game, your seat's side).
    const side = this.myColor ?? (this.seat === 1 ? 'light' : null);
    const flipped = (side === 'light') !== this.flipOverride;
    const viewed = this.viewPly === null ? null : this.history.get(this.viewPly);
    if (viewed) {
      // An earlier position, read-only: its pieces and the move that led there.
      const past = { ...game, pieces: viewed.pieces, last_move: viewed.last_move, space: viewed.space ?? game.space };
      const marks = s.rule_set === 'orbit' ? orbitMarks(past, null, false) : gridMarks(past, [], false, false);
      this.board.render({ ruleSet: s.rule_set, flipped, game: past, board: s.board, marks, choices: [] });
    } else {
      this.board.render({ ruleSet: s.rule_set, flipped, game, board: s.board, marks: this.marks(), choices: this.choices });
    }
    $('board-holder').classList.toggle('idle', !game);
    $('board-holder').classList.toggle('viewing', Boolean(viewed));
    $('viewing').hidden = !viewed;
    if (viewed) $('viewing-text').textContent = `Looking at the position after move ${this.viewPly} (${game.moves[this.viewPly - 1]}); the game goes on.`;
    rulesHelp($('room-help'), s.rule_set);
    $('room-pace-help').hidden = !isCorrespondence(s);
    if (isCorrespondence(s)) correspondenceHelp($('room-pace-help'));
    $('room-home').hidden = !(isCorrespondence(s) && seat >= 0);
    this.pace.render();

    const bottomColor = flipped ? 'light' : 'dark';
    this.renderSeat($('seat-bottom'), bottomColor);
    this.renderSeat($('seat-top'), bottomColor === 'dark' ? 'light' : 'dark');

    $('status').textContent = this.statusText();
    this.renderDrawOffer();
    this.renderActions();
    this.renderMoves();
    this.tick();
  }

  /** "Head to head: Ann 3 – 1 Bob, 2 drawn", when both players are accounts. */
  headToHeadText() {
    const s = this.state;
    const h2h = s.head_to_head;
    if (!h2h || !Array.isArray(h2h.wins) || !s.players[0] || !s.players[1]) return '';
    const name = (seat) => (seat === this.seat ? 'You' : s.players[seat].name);
    const draws = h2h.draws ? `, ${h2h.draws} drawn` : '';
    return `Head to head: ${name(0)} ${h2h.wins[0] ?? 0} – ${h2h.wins[1] ?? 0} ${name(1)}${draws}`;
  }

  renderSeat(element, color) {
    const s = this.state;
    const seat = this.seatOf(color);
    const player = s.players[seat];
    const side = sideName(s.rule_set, color);
    element.replaceChildren();
    element.dataset.seat = String(seat);
    const swatch = document.createElement('span');
    swatch.className = `swatch ${pieceShade(s.rule_set, color)}`;
    swatch.title = color === 'dark' ? `${side} (moves first)` : side;
    const who = document.createElement('span');
    who.className = 'who';
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = player ? player.name : 'Waiting for a player…';
    who.append(name);
    const tag = document.createElement('span');
    tag.className = 'tag';
    const bits = [side];
    if (seat === this.seat) bits.push('you');
    if (player && s.host === player.id) bits.push('host');
    if (s.series.points) {
      const total = s.series.points[seat] ?? 0;
      bits.push(`${total} series ${total === 1 ? 'point' : 'points'}`);
    } else {
      bits.push(`${s.series.wins[seat]} ${s.series.wins[seat] === 1 ? 'win' : 'wins'}`);
    }
    tag.textContent = ` (${bits.join(', ')})`;
    who.append(tag);
    if (player?.record) {
      const { rank, series_won: won, streak, best_streak: best } = player.record;
      const record = document.createElement('span');
      record.className = 'record';
      record.textContent = ` ${rank}${streak > 0 ? ` · ${streak} win streak` : ''}`;
      record.title = `${won} series won · streak ${streak} (best ${best})`;
      who.append(record);
    }
    element.append(swatch, who);
    const extras = seatExtras(s.game, color);
    for (const extra of extras) element.append(extra.element);
    if (player) {
      // Who is here: a seat's player is connected while a page of theirs is in the room.
      const presence = document.createElement('span');
      presence.className = `presence ${this.offline ? 'unknown' : player.connected ? 'online' : 'away'}`;
      presence.textContent = this.offline ? 'unknown' : player.connected ? 'here' : 'away';
      presence.title = this.offline ? 'Not known while this page reconnects' : player.connected ? 'Connected' : 'Not connected: their page is closed or offline';
      element.append(presence);
    }
    const toMove = s.phase === 'playing' && s.game && !s.game.result && s.game.turn === color;
    element.classList.toggle('to-move', Boolean(toMove));
    if (s.game && s.phase === 'playing' && !isCorrespondence(s)) {
      // Both clocks always show: the side to move counts down, the other waits at a full move.
      const clock = document.createElement('span');
      clock.className = `clock${toMove ? (this.offline ? ' paused' : ' running') : ''}`;
      clock.textContent = seconds(toMove ? s.game.remaining_ms - (this.offline ? Math.max(0, this.frozenAt - this.receivedAt) : 0) : this.moveClockMs);
      if (toMove && this.offline) clock.title = 'Stopped on this page while it reconnects; the server’s clock keeps running';
      clock.setAttribute('aria-label', toMove ? 'time left for this move' : 'time for each move');
      element.append(clock);
    }
    const rank = player?.record ? `, ${player.record.rank}, win streak ${player.record.streak}` : '';
    const more = extras.map((e) => `, ${e.words}`).join('');
    const here = player ? (this.offline ? ', presence unknown' : player.connected ? ', connected' : ', not connected') : '';
    element.setAttribute('aria-label', `${side}: ${player ? player.name : 'empty seat'}${seat === this.seat ? ' (you)' : ''}${here}${rank}${more}${toMove ? ', to move' : ''}`);
  }

  /** "Round 2, best of 3"; "Game 2 of 3" on the orbit board; "One game" (or its replay after a draw). */
  roundText() {
    const s = this.state;
    if (s.rule_set === 'orbit') return `Game ${s.series.round} of ${s.series_length}`;
    if (s.series_length === 1) return s.series.round > 1 ? 'Replay of a drawn game' : 'One game';
    return `Round ${s.series.round}, best of ${s.series_length}`;
  }

  /** The series score, yours first ("You 1–0 Bob"); seat order for spectators. */
  scoreText() {
    const s = this.state;
    const first = this.seat >= 0 ? this.seat : 0;
    const second = 1 - first;
    const name = (seat) => (seat === this.seat ? 'You' : s.players[seat]?.name ?? `seat ${seat + 1}`);
    const score = s.series.points
      ? `${s.series.points[first] ?? 0}–${s.series.points[second] ?? 0} on points`
      : `${s.series.wins[first]}–${s.series.wins[second]}`;
    const draws = !s.series.points && s.series.draws ? `, ${s.series.draws} drawn` : '';
    return `${name(first)} ${score} ${name(second)}${draws}`;
  }

  statusText() {
    const s = this.state;
    const game = s.game;
    const round = this.roundText();
    const score = this.scoreText();
    switch (s.phase) {
      case 'waiting': {
        if (s.players.every((p) => p)) {
          // Both seats are taken but a player is away: no clock runs until both are here.
          const away = s.players.findIndex((p) => !p.connected);
          const who = away >= 0 ? this.nameOf(away) : 'the other player';
          return `Waiting for ${who} to come back: the game starts, clock and all, once both players are here.`;
        }
        if (s.series.result) return `${this.seriesResultText()} Waiting for a new opponent.`;
        return this.seat >= 0 ? 'Waiting for an opponent — share the invite link.' : 'Waiting for players.';
      }
      case 'playing': {
        const mover = this.seatOf(game.turn);
        const declined = game.draw_declined && game.draw_declined === this.myColor ? ' Your draw offer was declined.' : '';
        if (mover === this.seat) {
          const turn = isCorrespondence(s)
            ? `Your move — take your time${game.must_capture.length > 0 ? ' (you must capture)' : ''}.`
            : game.must_capture.length > 0 ? 'Your turn — you must capture.' : 'Your turn.';
          return `${turn}${declined} ${round}; ${score}.`;
        }
        return `${this.nameOf(mover)} to move (${sideName(s.rule_set, game.turn)}).${declined} ${round}; ${score}.`;
      }
      case 'break':
        return `${this.gameResultText()} Score: ${score}. Next round soon.`;
      case 'finished':
        return `${this.gameResultText()} ${this.seriesResultText()}`;
      case 'ended':
        return `The host ended the match. ${this.seriesResultText()}`;
      default:
        return `Phase: ${s.phase}`;
    }
  }

  gameResultText() {
    const result = this.state.game?.result;
    if (!result) return '';
    const why = gameEndText(this.state.rule_set, result.reason);
    const points = result.points ? `, ${pointsScore(result.points, result.winner ?? 'dark')}` : '';
    if (!result.winner) return `Round ${this.state.series.round} drawn${points} (${why}).`;
    const winner = this.nameOf(this.seatOf(result.winner));
    return `${winner} won round ${this.state.series.round}${points} (${why}).`;
  }

  seriesResultText() {
    const result = this.state.series.result;
    if (!result) return '';
    const why = SERIES_END[result.reason] ?? result.reason;
    if (result.winner === undefined || result.winner === null) {
      return result.reason === 'points' ? 'Series drawn (equal total points).' : `Series drawn (${why}).`;
    }
    const winner = this.nameOf(result.winner);
    return `${winner} ${winner === 'You' ? 'win' : 'wins'} the series (${why}).`;
  }

  renderDrawOffer() {
    const game = this.state.game;
    const offer = this.state.phase === 'playing' ? game?.draw_offer : undefined;
    $('draw-offer').hidden = !offer;
    if (!offer) return;
    const mine = offer === this.myColor;
    const mayAnswer = this.seat >= 0 && !mine;
    $('draw-offer-text').textContent = mine
      ? 'You offered a draw; waiting for an answer.'
      : `${this.nameOf(this.seatOf(offer))} offered a draw.`;
    $('draw-answer').hidden = !mayAnswer;
  }

  renderActions() {
    const s = this.state;
    const seated = this.seat >= 0;
    const game = s.game;
    const bothSeated = s.players.every((p) => p !== null);
    const myTurn = s.phase === 'playing' && game && this.myColor === game.turn;
    $('offer-draw').hidden = !(seated && myTurn && !game.draw_offer);
    $('resign').hidden = !(seated && (s.phase === 'playing' || s.phase === 'break'));
    const next = $('next-round');
    next.hidden = !(seated && s.phase === 'break');
    next.disabled = seated && s.next_round[this.seat];
    next.textContent = next.disabled ? 'Waiting for the other player…' : 'Next round';
    const rematch = $('rematch');
    rematch.hidden = !(seated && bothSeated && (s.phase === 'finished' || s.phase === 'ended'));
    if (seated) {
      const opponentCalled = s.rematch[1 - this.seat];
      rematch.disabled = s.rematch[this.seat];
      rematch.textContent = rematch.disabled ? 'Rematch called — waiting…' : opponentCalled ? 'Accept rematch' : 'Rematch';
    }
    const host = seated && s.host === this.identity?.id;
    $('end-match').hidden = !(host && ['playing', 'break', 'finished'].includes(s.phase));
    const pdn = $('download-pdn');
    // An invite-only lobby shows its games only to its invite (PROTOCOL.md §1).
    const invite = s.invite ? `?invite=${encodeURIComponent(s.invite)}` : '';
    pdn.href = `/r/${s.code}/games.pdn${invite}`;
    pdn.setAttribute('download', `jumpgate-${s.code}.pdn`);
    // Only once a game has ended is there anything in the file.
    pdn.hidden = !(s.series.round > 1 || game?.result);
    $('flip-board').hidden = !game;
  }

  /** The move list: every move a button showing the position after it. */
  renderMoves() {
    const list = $('moves');
    const moves = this.state.game?.moves ?? [];
    const live = moves.length;
    const at = this.viewPly ?? live;
    const hadFocus = list.contains(document.activeElement);
    list.replaceChildren();
    for (let i = 0; i < moves.length; i += 2) {
      const item = document.createElement('li');
      for (let ply = i + 1; ply <= Math.min(i + 2, moves.length); ply += 1) {
        if (ply > i + 1) item.append(' ');
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'move';
        button.dataset.ply = String(ply);
        button.textContent = moves[ply - 1];
        const seen = this.history.has(ply);
        button.disabled = !seen;
        if (!seen) button.title = 'This position was not seen on this page';
        if (ply === at) button.setAttribute('aria-current', 'step');
        button.tabIndex = ply === at || (at === 0 && ply === 1) ? 0 : -1;
        item.append(button);
      }
      if (i + 2 >= moves.length) item.className = 'latest';
      list.append(item);
    }
    // Redrawn under the keyboard: the focus stays on the move shown.
    if (hadFocus) list.querySelector('button[tabindex="0"]')?.focus();
  }

  /** Counts the clocks down between states. */
  tick() {
    const s = this.state;
    if (!s) return;
    const clock = document.querySelector('#room .seat .clock.running');
    if (clock && s.game) {
      const left = s.game.remaining_ms - (performance.now() - this.receivedAt);
      clock.textContent = seconds(left);
      clock.classList.toggle('low', left < 10_000);
    }
    this.pace.tick();
    if (s.phase === 'break' && s.break_ends_at) {
      const left = s.break_ends_at - (Date.now() + this.serverOffset);
      const next = $('next-round');
      if (!next.disabled) next.textContent = `Next round (starts in ${seconds(left)})`;
    }
  }
}

// ---------------------------------------------------------------------------
// Solo play: a game against the computer, or two people on one device.

const DEVICE_RECORD_KEY = 'jumpgate.device-record';
const RANKED_SEEN_KEY = 'jumpgate.ranked-solo';
const KEPT_IDS = 50;

function readJson(storage, key, fallback) {
  try {
    const value = JSON.parse(storage.getItem(key));
    return value && typeof value === 'object' ? value : fallback;
  } catch {
    return fallback;
  }
}

/**
 * This device's own record of finished solo and same-device games, kept in
 * localStorage: games played, Dark wins, Light wins, draws. Each game (by
 * id) counts once, however often its final state arrives.
 */
export class DeviceRecord {
  constructor(storage = window.localStorage) {
    this.storage = storage;
  }

  get() {
    const r = readJson(this.storage, DEVICE_RECORD_KEY, {});
    const n = (v) => (Number.isSafeInteger(v) && v >= 0 ? v : 0);
    return {
      games: n(r.games), dark: n(r.dark), light: n(r.light), draws: n(r.draws),
      counted: Array.isArray(r.counted) ? r.counted.filter((id) => typeof id === 'string') : [],
    };
  }

  /** Counts a finished game once; returns whether it was new. */
  add(id, winner) {
    const r = this.get();
    if (r.counted.includes(id)) return false;
    r.games += 1;
    if (winner === 'dark') r.dark += 1;
    else if (winner === 'light') r.light += 1;
    else r.draws += 1;
    r.counted = [...r.counted, id].slice(-KEPT_IDS);
    try {
      this.storage.setItem(DEVICE_RECORD_KEY, JSON.stringify(r));
    } catch {
      // Storage full or blocked: the record is a nicety.
    }
    return true;
  }

  text() {
    const { games, dark, light, draws } = this.get();
    if (games === 0) return 'No games finished on this device yet.';
    return `${games} ${games === 1 ? 'game' : 'games'} played · Dark won ${dark} · Light won ${light} · ${draws} drawn`;
  }
}

/** Ids of solo games seen ranked, to say "undo used" once one turns practice. */
function rankedSeen(storage, id, ranked) {
  const ids = readJson(storage, RANKED_SEEN_KEY, []);
  const list = Array.isArray(ids) ? ids : [];
  if (ranked && !list.includes(id)) {
    try {
      storage.setItem(RANKED_SEEN_KEY, JSON.stringify([...list, id].slice(-KEPT_IDS)));
    } catch {
      // Not essential.
    }
    return true;
  }
  return list.includes(id);
}


export class SoloScreen {
  /**
   * @param {{ send(message): Promise, request(message): Promise (rejects on refusal),
   *           notify(text, kind?): void, newGame(options): Promise, home(): void,
   *           finished(): void }} actions
   */
  constructor(actions, record = new DeviceRecord()) {
    this.actions = actions;
    this.record = record;
    this.state = null;
    this.prefix = [];
    this.sending = false;
    this.wasRanked = false;
    this.choices = [];
    this.holder = $('solo-board-holder');
    // Only one board is in the page at a time: this one while a solo game shows.
    this.board = new BoardSlot(this.holder, {
      onActivate: (square) => this.activate(square),
      onClear: () => this.clearSelection(),
      onChoose: (move) => this.play(move),
    });

    $('solo-undo').addEventListener('click', () => this.undo());
    $('solo-resign').addEventListener('click', async () => {
      const s = this.state;
      if (!s || s.game.result) return;
      const question = s.mode === 'same_device'
        ? `Resign for ${this.side(s.game.turn)} (the side to move)?`
        : s.ranked ? 'Resign this ranked game? It counts as a loss on the leaderboard.' : 'Resign this game?';
      if (!window.confirm(question)) return;
      await this.actions.send(msg.resign());
    });
    $('solo-new').addEventListener('click', () => this.newGame());
    $('solo-home').addEventListener('click', () => this.actions.home());
  }

  get visible() {
    return !$('solo').hidden;
  }

  /** A side's name in this game's rule set (Black, White, or Dark, Light on the orbit board). */
  side(color) {
    return sideName(this.state?.rule_set, color);
  }

  show() {
    $('solo').hidden = false;
    if (this.state) this.board.attach(this.state.rule_set);
  }

  hide() {
    $('solo').hidden = true;
    $('solo-status').textContent = '';
    this.board.detach();
    this.state = null;
    this.prefix = [];
    this.choices = [];
  }

  /** The side the person at this screen plays (null on one device: both). */
  get you() {
    return this.state?.mode === 'computer' ? this.state.you ?? 'dark' : null;
  }

  get interactive() {
    const s = this.state;
    if (!s || this.sending || s.thinking || s.game.result) return false;
    if (s.game.legal_moves.length === 0) return false;
    return s.mode === 'same_device' || s.game.turn === this.you;
  }

  update(state) {
    const previous = this.state;
    const sameGame = previous?.id === state.id;
    this.state = state;
    this.wasRanked = rankedSeen(this.record.storage, state.id, state.ranked);
    const game = state.game;
    const stillValid = this.prefix.length > 0 && movesWithPrefix(game.legal_moves, this.prefix).length > 0;
    if (!sameGame || !stillValid || previous?.game?.ply !== game.ply) {
      this.prefix = [];
      this.choices = [];
    }
    this.sending = false;
    if (game.result && this.record.add(state.id, game.result.winner ?? null)) this.actions.finished();
    this.render();
  }

  clearSelection() {
    this.prefix = [];
    this.choices = [];
    this.render();
  }

  activate(square) {
    if (!this.interactive) return;
    if (this.state.rule_set === 'orbit') {
      const click = orbitClick(this.state.game.legal_moves, this.prefix[0] ?? null, square);
      this.prefix = click.origin ? [click.origin] : [];
      this.choices = click.choices;
      if (click.play) this.play(click.play);
      else this.render();
      return;
    }
    const game = this.state.game;
    const moves = game.legal_moves;
    const startsHere = moves.some((m) => m.path[0] === square);
    if (this.prefix.length === 0) {
      if (startsHere) this.prefix = [square];
      else if (game.must_capture.length > 0 && game.pieces.some((p) => p.square === square && p.color === game.turn)) {
        this.actions.notify('A capture is mandatory: move one of the marked pieces.', 'info');
      }
      this.render();
      return;
    }
    if (this.prefix.length === 1 && square === this.prefix[0]) {
      this.clearSelection();
      return;
    }
    const candidates = movesWithPrefix(moves, this.prefix);
    const next = candidates.filter((m) => m.path[this.prefix.length] === square);
    if (next.length > 0) {
      this.prefix = [...this.prefix, square];
      const complete = next.filter((m) => m.path.length === this.prefix.length);
      if (complete.length > 0 && complete.length === next.length) this.play(complete[0]);
      else this.render();
      return;
    }
    const ending = candidates.filter((m) => m.path[m.path.length - 1] === square);
    if (ending.length === 1) {
      this.play(ending[0]);
      return;
    }
    this.prefix = startsHere ? [square] : [];
    this.render();
  }

  async play(move) {
    this.sending = true;
    this.prefix = [...move.path];
    this.choices = [];
    this.render();
    try {
      await this.actions.send(msg.playMove(move));
    } finally {
      this.sending = false;
    }
    if (this.state?.game?.legal_moves.includes(move)) this.clearSelection();
  }

  async undo() {
    const s = this.state;
    if (!s) return;
    if (s.ranked && !window.confirm('Undo turns this ranked game into practice: it will no longer count for the leaderboard. Undo?')) return;
    try {
      await this.actions.request(msg.undo());
    } catch (error) {
      const why = {
        not_now: s.thinking ? 'Wait for the computer to move, then undo.'
          : s.game.result ? 'The game is over; a finished game cannot be undone.' : 'There is nothing to undo yet.',
        no_game_in_progress: 'There is no solo game to undo in.',
      }[error.code];
      this.actions.notify(why ?? describeError(error.code, error.message));
    }
  }

  async newGame() {
    const s = this.state;
    if (!s) return;
    if (!s.game.result && s.game.moves.length > 0) {
      const question = s.ranked
        ? 'This ranked game is unfinished: finish or resign it before starting another.'
        : 'Start a new game? This one will be abandoned.';
      if (s.ranked) {
        this.actions.notify(question, 'info');
        return;
      }
      if (!window.confirm(question)) return;
    }
    await this.actions.newGame({
      ruleSet: s.rule_set, mode: s.mode, level: s.level, ranked: s.mode === 'computer' && this.wasRanked,
    });
  }

  marks() {
    const game = this.state.game;
    const active = this.interactive || this.sending;
    if (this.state.rule_set === 'orbit') return orbitMarks(game, this.prefix[0] ?? null, active);
    return gridMarks(game, this.prefix, active, this.interactive);
  }

  badgeText() {
    const s = this.state;
    if (s.mode === 'same_device') return 'Practice';
    if (s.ranked) return 'Ranked';
    return this.wasRanked ? 'Practice — undo used' : 'Practice';
  }

  render() {
    const s = this.state;
    if (!s) return;
    const game = s.game;
    const computer = s.mode === 'computer';
    $('solo-title').textContent = computer ? `You against the ${levelLabel(s.level ?? 'executive')}` : 'Two players, one screen';
    $('solo-meta').textContent = `${ruleSetLabel(s.rule_set)} · ${computer ? `computer level ${levelLabel(s.level ?? 'executive')}` : 'same device, no clock'}`;
    const badge = $('solo-badge');
    badge.textContent = this.badgeText();
    badge.className = `badge ${s.ranked ? 'ranked' : 'practice'}`;

    const flipped = this.you === 'light';
    this.board.render({ ruleSet: s.rule_set, flipped, game, marks: this.marks(), choices: this.choices });
    const bottom = flipped ? 'light' : 'dark';
    this.renderSeat($('solo-seat-bottom'), bottom);
    this.renderSeat($('solo-seat-top'), bottom === 'dark' ? 'light' : 'dark');

    const status = $('solo-status');
    status.textContent = this.statusText();
    status.classList.toggle('thinking', Boolean(s.thinking));

    const over = Boolean(game.result);
    const needed = computer && game.turn === this.you ? 2 : 1;
    const undo = $('solo-undo');
    undo.hidden = over;
    undo.disabled = s.thinking || game.moves.length < needed;
    undo.textContent = s.ranked ? 'Undo (makes this game practice)' : 'Undo';
    $('solo-resign').hidden = over;
    $('solo-resign').textContent = computer ? 'Resign' : `Resign for ${this.side(game.turn)}`;

    const list = $('solo-moves');
    list.replaceChildren();
    for (let i = 0; i < game.moves.length; i += 2) {
      const item = document.createElement('li');
      item.textContent = game.moves.slice(i, i + 2).join('  ');
      if (i + 2 >= game.moves.length) item.className = 'latest';
      list.append(item);
    }
    $('solo-no-moves').hidden = game.moves.length > 0;
    rulesHelp($('solo-help'), s.rule_set);
    $('solo-record').textContent = `This device: ${this.record.text()}`;
  }

  renderSeat(element, color) {
    const s = this.state;
    const game = s.game;
    element.replaceChildren();
    const swatch = document.createElement('span');
    swatch.className = `swatch ${pieceShade(s.rule_set, color)}`;
    swatch.title = color === 'dark' ? `${this.side(color)} (moves first)` : this.side(color);
    const name = document.createElement('span');
    name.className = 'name';
    let who;
    if (s.mode === 'same_device') who = `${this.side(color)} player`;
    else if (color === this.you) who = 'You';
    else who = `Computer (${levelLabel(s.level ?? 'executive')})`;
    name.textContent = who;
    const tag = document.createElement('span');
    tag.className = 'tag';
    tag.textContent = `(${this.side(color)})`;
    element.append(swatch, name, tag);
    const extras = seatExtras(game, color);
    for (const extra of extras) element.append(extra.element);
    const toMove = !game.result && game.turn === color;
    element.classList.toggle('to-move', toMove);
    if (toMove && s.thinking && color !== this.you) {
      const thinking = document.createElement('span');
      thinking.className = 'thinking-tag';
      thinking.textContent = 'thinking…';
      element.append(thinking);
    }
    const more = extras.map((e) => `, ${e.words}`).join('');
    element.setAttribute('aria-label', `${this.side(color)}: ${who}${more}${toMove ? ', to move' : ''}`);
  }

  statusText() {
    const s = this.state;
    const game = s.game;
    if (game.result) return this.resultText();
    if (s.mode === 'same_device') {
      return `${this.side(game.turn)} to move${game.must_capture.length > 0 ? ' — a capture is mandatory' : ''}.`;
    }
    if (game.turn !== this.you) return this.thinkingText();
    return game.must_capture.length > 0 ? 'Your turn — you must capture.' : 'Your turn.';
  }

  /** The computer's turn: where its search stands in the server's queue, when the server says. */
  thinkingText() {
    const queue = this.state.queue;
    if (!queue || (queue.ahead === 0 && queue.expected_ms < 1500)) return 'The computer is thinking…';
    const seconds = Math.max(1, Math.round(queue.expected_ms / 1000));
    const wait = queue.expected_ms > 0 ? ` — about ${seconds} s` : '';
    if (queue.ahead === 0) return `The computer is thinking${wait}.`;
    const games = queue.ahead === 1 ? '1 other game' : `${queue.ahead} other games`;
    return `The computer is busy with ${games} first${wait}.`;
  }

  resultText() {
    const s = this.state;
    const result = s.game.result;
    const why = gameEndText(s.rule_set, result.reason);
    const points = result.points ? `, ${pointsScore(result.points, result.winner ?? 'dark')}` : '';
    if (!result.winner) return `Game drawn${points} (${why}).`;
    if (s.mode === 'same_device') return `${this.side(result.winner)} won${points} (${why}).`;
    if (result.winner === this.you) return `You won${points} (${why})!`;
    return `The computer won${points} (${why}).`;
  }
}
