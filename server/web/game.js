// game.js — the room screen: seats and clocks, series score, whose turn,
// the board with move selection, draw offers, break, results, the series
// buttons and the move list. It sends actions through `send` and never
// decides the rules: legal moves come from the server's state. The orbit
// rule set gets its own board view (orbit.js), and Space Mode its wormholes,
// boosts and thruster charges on the 8×8 board. A correspondence lobby has
// no move clock; its claim panel is pace.js's. The move list shows earlier
// positions: those this page saw, and those the server replays for a page
// that came in mid-game (/r/{CODE}/positions). Solo play is in solo.js, the
// parts both screens use in play.js.

import { orbitClick, orbitMarks, orbitPointsNote } from './orbit.js';
import * as msg from './protocol.js';
import { pieceShade, ruleSetLabel, seriesLabel, sideName } from './protocol.js';
import { correspondenceHelp, rulesHelp } from './help.js';
import { PacePanel, isCorrespondence } from './pace.js';
import {
  BoardSlot, MoveList, PositionHistory, fact, gameEndText, gridMarks, movesWithPrefix, pointsScore, seatExtras, seatLines, seconds,
  orbitNoteAfter, sendChosenMove, stepTowardsMove,
} from './play.js';

// The solo screen lives in solo.js, the shared parts in play.js; app.js
// and the browser tests import them from here as before.
export { DeviceRecord, SoloScreen } from './solo.js';
export { movesWithPrefix, spaceMarks } from './play.js';

const $ = (id) => document.getElementById(id);

const SERIES_END = {
  majority: 'won a majority',
  round_limit: 'round limit reached',
  resigned: 'resignation',
  left: 'a player left',
  ended_by_host: 'ended by the host',
  points: 'on total points',
  expired: 'the lobby expired with no move',
};

/** The buttons of lobby actions, disabled while the page is offline (connection.js refuses those actions too). */
const HELD_OFFLINE = ['offer-draw', 'accept-draw', 'decline-draw', 'resign', 'next-round', 'rematch', 'accept-rematch', 'end-match', 'claim-win'];

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
    this.history = new PositionHistory('jumpgate.history'); // the current round's positions
    this.asked = { key: null, ply: -1, busy: false }; // the last positions asked of the server
    this.rematchHidden = null; // the rematch call (series and round) declined on this page, until that series is left
    this.moveClockMs = 0; // the longest time a move was given, shown on the idle clock
    this.board = new BoardSlot($('board-holder'), {
      onActivate: (square) => this.activate(square),
      onClear: () => this.clearSelection(),
      onChoose: (move) => this.play(move),
    });

    const act = (id, build, confirmText) => {
      $(id).addEventListener('click', async () => {
        const question = typeof confirmText === 'function' ? confirmText() : confirmText;
        if (question && !window.confirm(question)) return;
        await this.actions.send(build());
      });
    };
    this.addPanels();
    act('offer-draw', msg.offerDraw);
    act('accept-draw', msg.acceptDraw);
    act('decline-draw', msg.declineDraw);
    act('resign', msg.resign, () => this.resignQuestion());
    act('next-round', msg.nextRound);
    act('rematch', msg.rematch);
    act('end-match', msg.endMatch, 'End the match for both players?');
    $('leave').addEventListener('click', () => {
      const s = this.state;
      // Leaving mid-series concedes it (PROTOCOL.md §11): ask first, as Resign does.
      // Offline, Leave only goes home on this page (app.js): the seat stays.
      if (s && !this.offline && this.seat >= 0 && ['playing', 'break'].includes(s.phase)
          && !window.confirm('Leave this lobby? Leaving now forfeits the whole series to your opponent.')) return;
      this.actions.leave();
    });
    this.moveList = new MoveList($('moves'), (ply) => this.viewMove(ply));
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
  }

  /**
   * Keeps the position after each ply seen, so the move list can show it,
   * and asks the server for the ones this page never saw (it came in
   * mid-game, or missed moves while away).
   */
  remember(state) {
    const game = state.game;
    if (!game) return;
    // Round 1 of every series has the same number (and, one game long, the
    // same dark seat): the history also drops positions whose moves before
    // them differ (PositionHistory.follow). Space Mode's wormholes tell its
    // games apart when the same moves open them.
    const holes = game.space?.wormholes?.join('-') ?? '';
    this.history.follow(`${state.code}#${state.series.round}#${game.dark_seat}#${holes}`, game);
    this.askPositions(state);
  }

  /**
   * Fetches the round's positions from `/r/{CODE}/positions` (PROTOCOL.md
   * §2) when some are missing that were not there when last asked. The
   * server replays the game; this page never works a position out itself.
   */
  async askPositions(state) {
    const key = this.history.key;
    const game = state.game;
    const gaps = this.history.missing(game);
    const asked = this.asked;
    if (gaps.length === 0 || asked.busy || (asked.key === key && gaps.every((ply) => ply <= asked.ply))) return;
    Object.assign(asked, { key, ply: game.ply, busy: true });
    try {
      const invite = state.invite ? `?invite=${encodeURIComponent(state.invite)}` : '';
      const response = await fetch(`/r/${encodeURIComponent(state.code)}/positions${invite}`, {
        headers: { accept: 'application/json' },
      });
      if (!response.ok) return;
      const sent = await response.json();
      const now = this.state?.game;
      if (!now || this.history.key !== key || sent.round !== this.state.series.round || sent.dark_seat !== now.dark_seat) return;
      // Only the plies whose moves up to them are this game's (another
      // series' round of the same number may have been sent).
      const moves = Array.isArray(sent.moves) ? sent.moves : [];
      let agree = 0;
      while (agree < moves.length && agree < now.moves.length && moves[agree] === now.moves[agree]) agree += 1;
      let added = false;
      for (const p of sent.positions ?? []) {
        if (!(p.ply <= agree)) continue;
        const position = { pieces: p.pieces, last_move: p.last_move ?? null, space: p.space ?? null, points: p.points ?? null };
        added = this.history.add(p.ply, position, now) || added;
      }
      if (added) {
        this.history.save();
        this.render();
      }
    } catch {
      // Not fetched: those moves stay unpickable, as before.
    } finally {
      asked.busy = false;
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

  /**
   * app.js: while the connection is down, no moves (nothing half chosen is
   * kept, and the board takes neither pointer nor keys), no lobby action
   * (their buttons are disabled), the clock stands still here and presence
   * is unknown.
   */
  setOffline(offline) {
    if (Boolean(this.offline) === offline) return;
    if (offline) this.frozenAt = performance.now();
    this.offline = offline;
    this.prefix = [];
    this.choices = [];
    // The tab's title stops saying "Your turn" while no move can be sent.
    if (this.state) this.actions.turn?.({ mine: !offline && this.isMyTurn(), fresh: false });
    $('board-holder').inert = offline;
    // Back online: render() and the claim panel set the buttons again.
    for (const id of HELD_OFFLINE) $(id).disabled = offline;
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
    // A rematch declined here is put away for that series only: once the
    // phase leaves its end, a later series' call is a new one.
    if (!sameRoom || !['finished', 'ended'].includes(state.phase)) this.rematchHidden = null;
    this.announce(sameRoom ? previous : null);
    const mine = this.isMyTurn();
    const wasMine = sameRoom && previous.game?.ply === game?.ply && previous.series.round === state.series.round
      && previous.phase === state.phase && this.wasMyTurn;
    this.wasMyTurn = mine;
    this.actions.turn?.({ mine: mine && !this.offline, fresh: mine && !wasMine && sameRoom && !this.offline });
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
    const game = this.state.game;
    const step = stepTowardsMove(game.legal_moves, this.prefix, square, game.must_capture, this.ownPieceOn(square));
    if (step.cleared) {
      this.clearSelection();
      return;
    }
    this.prefix = step.prefix;
    if (step.mandatory) this.actions.notify('A capture is mandatory: move one of the marked pieces.', 'info');
    if (step.play) this.play(step.play);
    else this.render();
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

  play(move) {
    return sendChosenMove(this, move);
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
    const series = seriesLabel(s.series_length, s.rule_set);
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
      const past = {
        ...game, pieces: viewed.pieces, last_move: viewed.last_move, space: viewed.space ?? game.space, points: viewed.points ?? game.points,
      };
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
    this.orbitNote.hidden = !(game && s.rule_set === 'orbit');
    if (!this.orbitNote.hidden) {
      const names = { dark: this.nameOf(this.seatOf('dark')), light: this.nameOf(this.seatOf('light')) };
      this.orbitNote.textContent = `${orbitPointsNote(game, names, this.myColor ?? 'dark')} ${this.seriesPointsText()}`.trim();
    }
    this.renderDrawOffer();
    this.renderRematchOffer();
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
    // Two lines, so that a phone never cuts what matters: the name and
    // "you" on the first, the side and the score leading the second.
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = player ? player.name : 'Waiting for a player…';
    const facts = [fact(side, 'side')];
    if (s.series.points) {
      const total = s.series.points[seat] ?? 0;
      facts.push(fact(`${total} series ${total === 1 ? 'point' : 'points'}`, 'score'));
    } else {
      facts.push(fact(`${s.series.wins[seat]} ${s.series.wins[seat] === 1 ? 'win' : 'wins'}`, 'score'));
    }
    if (player && s.host === player.id) facts.push(fact('host'));
    if (player?.record) {
      const { rank, series_won: won, streak, best_streak: best } = player.record;
      const record = fact(`${rank}${streak > 0 ? ` · ${streak} win streak` : ''}`, 'record');
      record.title = `${won} series won · streak ${streak} (best ${best})`;
      facts.push(record);
    }
    const extras = seatExtras(s.game, color);
    facts.push(...extras.map((extra) => extra.element));
    element.append(swatch, seatLines(name, seat === this.seat, facts));
    if (player) {
      // Who is here: a seat's player is connected while a page of theirs is in the room.
      const presence = document.createElement('span');
      presence.className = `presence ${this.offline ? 'unknown' : player.connected ? 'online' : 'away'}`;
      presence.textContent = this.offline ? 'unknown' : player.connected ? 'here' : 'away';
      presence.title = this.offline ? 'Not known while this page reconnects' : player.connected ? 'Connected' : 'Not connected: their page is closed or offline';
      element.querySelector('.facts').append(presence);
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
    if (s.series.points) {
      return `${name(first)} ${s.series.points[first] ?? 0}–${s.series.points[second] ?? 0} ${name(second)} on points`;
    }
    const draws = s.series.draws ? `, ${s.series.draws} drawn` : '';
    return `${name(first)} ${s.series.wins[first]}–${s.series.wins[second]} ${name(second)}${draws}`;
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
        if (mover === this.seat && this.offline) {
          return `Your move, once the connection is back: none can be sent now. ${round}; ${score}.`;
        }
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

  /**
   * The panels this screen adds to the page's markup: the rematch call's
   * line with Accept and Decline (under the draw offer's), and the orbit
   * points' explanation under the status.
   */
  addPanels() {
    const panel = document.createElement('div');
    panel.id = 'rematch-offer';
    panel.className = 'panel offer';
    panel.hidden = true;
    const text = document.createElement('p');
    text.id = 'rematch-offer-text';
    text.setAttribute('aria-live', 'polite');
    const row = document.createElement('div');
    row.className = 'row';
    row.id = 'rematch-answer';
    const accept = document.createElement('button');
    accept.type = 'button';
    accept.id = 'accept-rematch';
    accept.className = 'primary';
    accept.textContent = 'Accept rematch';
    accept.addEventListener('click', () => this.actions.send(msg.rematch()));
    const decline = document.createElement('button');
    decline.type = 'button';
    decline.id = 'decline-rematch';
    decline.textContent = 'Decline';
    // The protocol has no way to refuse a rematch (PROTOCOL.md, "Rematch"):
    // Decline only puts the call away on this page, and says so.
    decline.addEventListener('click', () => {
      this.rematchHidden = this.rematchCallKey();
      this.render();
    });
    row.append(accept, decline);
    panel.append(text, row);
    $('draw-offer').after(panel);

    this.orbitNote = orbitNoteAfter('orbit-note', $('status'));
  }

  /** The words before resigning: a resignation gives up the whole series. */
  resignQuestion() {
    const s = this.state;
    const other = s ? this.nameOf(1 - this.seat) : 'your opponent';
    const whole = s && (s.series_length > 1 || s.series.round > 1);
    if (!whole && s?.phase === 'break') {
      // One game, drawn: the break before its replay.
      return `Resign? ${other} wins the match, and the replay of the drawn game is not played.`;
    }
    if (!whole) return `Resign? ${other} wins this game, and with it the match.`;
    const games = s.rule_set === 'orbit' ? 'games' : 'rounds';
    return `Resign the series? Resigning gives up the whole series, not this ${s.rule_set === 'orbit' ? 'game' : 'round'} alone: `
      + `${other} wins it at once and the ${games} left are not played. Score now: ${this.scoreText()}.`;
  }

  /** How an orbit series is scored, beside the points of the game. */
  seriesPointsText() {
    const s = this.state;
    if (!s.series.points) return '';
    return `Series: ${this.scoreText()}, adding up each game's points when it ends `
      + '(a game won on time, by resignation or because a player left counts 3–0).';
  }

  /** Names the opponent's standing rematch call, so Decline can put that one away. */
  rematchCallKey() {
    const s = this.state;
    const opponent = s.players[1 - this.seat];
    return `${s.code}#${s.series.round}#${opponent?.id ?? ''}`;
  }

  /** "‹name› wants a rematch", with Accept and Decline, for the player called. */
  renderRematchOffer() {
    const s = this.state;
    const seated = this.seat >= 0;
    const over = s.phase === 'finished' || s.phase === 'ended';
    const called = seated && over && s.players.every((p) => p !== null) && s.rematch[1 - this.seat] && !s.rematch[this.seat];
    const declined = called && this.rematchHidden === this.rematchCallKey();
    $('rematch-offer').hidden = !called;
    if (!called) return;
    const name = this.nameOf(1 - this.seat);
    $('rematch-answer').hidden = declined;
    $('rematch-offer-text').textContent = declined
      ? `You declined ${name}’s rematch on this page. ${name} is not told: the server has no message for it. `
        + 'Leave the lobby to end it, or press Rematch if you change your mind.'
      : `${name} wants a rematch: a new series, seats swapped.`;
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
    const resign = $('resign');
    resign.hidden = !(seated && (s.phase === 'playing' || s.phase === 'break'));
    const whole = s.series_length > 1 || s.series.round > 1;
    resign.textContent = whole ? 'Resign the series' : 'Resign';
    resign.title = whole ? 'Gives up the whole series, not only this round' : 'Gives up the game';
    const next = $('next-round');
    next.hidden = !(seated && s.phase === 'break');
    next.disabled = seated && s.next_round[this.seat];
    next.textContent = next.disabled ? 'Waiting for the other player…' : 'Next round';
    const rematch = $('rematch');
    // While the rematch line offers Accept, its button stands in for this one.
    rematch.hidden = !(seated && bothSeated && (s.phase === 'finished' || s.phase === 'ended'))
      || !$('rematch-answer').hidden && !$('rematch-offer').hidden;
    if (seated) {
      const opponentCalled = s.rematch[1 - this.seat];
      rematch.disabled = s.rematch[this.seat];
      const declined = this.rematchHidden === this.rematchCallKey();
      rematch.textContent = rematch.disabled ? 'Rematch called — waiting…' : opponentCalled && !declined ? 'Accept rematch' : 'Rematch';
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
    const moves = this.state.game?.moves ?? [];
    this.moveList.render(moves, this.viewPly ?? moves.length, (ply) => this.history.has(ply));
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
    // Whatever render() or the claim panel set, nothing is sent while offline.
    if (this.offline) for (const id of HELD_OFFLINE) $(id).disabled = true;
  }
}
