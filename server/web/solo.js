// solo.js — solo play: a game against the computer, or two people on one
// device (no clock, undo allowed), and this device's record of the games
// finished here. Like game.js it only shows what the server sends and
// sends what the person picks; the move list shows the earlier positions
// this page saw.

import { describeError } from './errors.js';
import { orbitClick, orbitMarks, orbitPointsNote } from './orbit.js';
import * as msg from './protocol.js';
import { levelLabel, pieceShade, ruleSetLabel, sideName } from './protocol.js';
import { rulesHelp } from './help.js';
import {
  BoardSlot, MoveList, PositionHistory, fact, gameEndText, gridMarks, movesWithPrefix, pointsScore, seatExtras, seatLines,
  orbitNoteAfter, sendChosenMove, stepTowardsMove,
} from './play.js';

const $ = (id) => document.getElementById(id);

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
    this.offline = false;
    this.choices = [];
    this.viewPly = null; // a ply of the move list being looked at, or null for the live board
    this.history = new PositionHistory('jumpgate.solo-history');
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
    this.moveList = new MoveList($('solo-moves'), (ply) => this.viewMove(ply));
    this.addPanels();
  }

  /**
   * What this screen adds to the page's markup: the "looking at an earlier
   * position" panel (as the lobby room has) and the orbit points' note.
   */
  addPanels() {
    const viewing = document.createElement('div');
    viewing.id = 'solo-viewing';
    viewing.className = 'panel viewing';
    viewing.hidden = true;
    const text = document.createElement('p');
    text.id = 'solo-viewing-text';
    const back = document.createElement('button');
    back.type = 'button';
    back.id = 'solo-back-to-live';
    back.className = 'primary';
    back.textContent = 'Back to the game';
    back.addEventListener('click', () => this.viewMove(null));
    viewing.append(text, back);
    $('solo-status').after(viewing);
    this.orbitNote = orbitNoteAfter('solo-orbit-note', $('solo-status'));
  }

  /** Shows the position after `ply` (read-only), or the live board for null. */
  viewMove(ply) {
    const live = this.state?.game?.ply ?? 0;
    this.viewPly = ply === null || ply >= live || !this.history.has(ply) ? null : ply;
    this.prefix = [];
    this.choices = [];
    this.render();
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
    this.viewPly = null;
    this.history.clear();
  }

  /** The side the person at this screen plays (null on one device: both). */
  get you() {
    return this.state?.mode === 'computer' ? this.state.you ?? 'dark' : null;
  }

  get interactive() {
    const s = this.state;
    if (!s || this.offline || this.sending || s.thinking || s.game.result) return false;
    if (s.game.legal_moves.length === 0 || this.viewPly !== null) return false;
    return s.mode === 'same_device' || s.game.turn === this.you;
  }

  /**
   * app.js: while the connection is down (a banner covers the board), no
   * move, undo or resign: nothing half chosen is kept, the board takes
   * neither pointer nor keys, and connection.js refuses those requests.
   */
  setOffline(offline) {
    if (this.offline === offline) return;
    this.offline = offline;
    this.prefix = [];
    this.choices = [];
    this.holder.inert = offline;
    this.render();
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
    this.history.follow(state.id, game);
    if (!sameGame || (this.viewPly !== null && !this.history.has(this.viewPly))) this.viewPly = null;
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
    const ownPiece = game.pieces.some((p) => p.square === square && p.color === game.turn);
    const step = stepTowardsMove(game.legal_moves, this.prefix, square, game.must_capture, ownPiece);
    if (step.cleared) {
      this.clearSelection();
      return;
    }
    this.prefix = step.prefix;
    if (step.mandatory) this.actions.notify('A capture is mandatory: move one of the marked pieces.', 'info');
    if (step.play) this.play(step.play);
    else this.render();
  }

  play(move) {
    return sendChosenMove(this, move);
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
    const viewed = this.viewPly === null ? null : this.history.get(this.viewPly);
    if (viewed) {
      // An earlier position, read-only: its pieces and the move that led there.
      const past = {
        ...game, pieces: viewed.pieces, last_move: viewed.last_move, space: viewed.space ?? game.space, points: viewed.points ?? game.points,
      };
      const marks = s.rule_set === 'orbit' ? orbitMarks(past, null, false) : gridMarks(past, [], false, false);
      this.board.render({ ruleSet: s.rule_set, flipped, game: past, marks, choices: [] });
    } else {
      this.board.render({ ruleSet: s.rule_set, flipped, game, marks: this.marks(), choices: this.choices });
    }
    this.holder.classList.toggle('viewing', Boolean(viewed));
    $('solo-viewing').hidden = !viewed;
    if (viewed) $('solo-viewing-text').textContent = `Looking at the position after move ${this.viewPly} (${game.moves[this.viewPly - 1]}); the game goes on.`;
    this.orbitNote.hidden = s.rule_set !== 'orbit';
    if (!this.orbitNote.hidden) {
      const names = computer
        ? { dark: this.you === 'dark' ? 'You' : 'The computer', light: this.you === 'light' ? 'You' : 'The computer' }
        : { dark: this.side('dark'), light: this.side('light') };
      this.orbitNote.textContent = orbitPointsNote(game, names, this.you ?? 'dark');
    }
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
    undo.disabled = this.offline || s.thinking || game.moves.length < needed;
    undo.textContent = s.ranked ? 'Undo (makes this game practice)' : 'Undo';
    $('solo-resign').hidden = over;
    $('solo-resign').disabled = this.offline;
    $('solo-resign').textContent = computer ? 'Resign' : `Resign for ${this.side(game.turn)}`;

    this.moveList.render(game.moves, this.viewPly ?? game.moves.length, (ply) => this.history.has(ply));
    $('solo-no-moves').textContent = game.moves.length > 0
      ? 'Pick a move to see the position after it; arrow keys step through them.'
      : 'No moves yet.';
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
    const extras = seatExtras(game, color);
    element.append(swatch, seatLines(name, false, [fact(this.side(color), 'side'), ...extras.map((e) => e.element)]));
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
