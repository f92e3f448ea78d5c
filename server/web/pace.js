// pace.js — correspondence games (PROTOCOL.md, `pace`): in the room, the
// panel that says whose move it is and until when (the claim time), with
// the Claim win button and the lobby's expiry; and the dates and times these
// are shown in, shared with the home page's "My games" and the lobby preview.

import * as msg from './protocol.js';

const $ = (id) => document.getElementById(id);

/** A moment for people: "Tue, 14 Jan, 14:05" in the browser's language and zone. */
export function formatWhen(ms) {
  const date = new Date(ms);
  const options = { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' };
  if (date.getFullYear() !== new Date().getFullYear()) options.year = 'numeric';
  return date.toLocaleString(undefined, options);
}

/** How long until `ms`: "2 d 5 h", "3 h 10 min", "4 min", "less than a minute". */
export function timeUntil(ms, now = Date.now()) {
  const minutes = Math.floor(Math.max(0, ms - now) / 60_000);
  if (minutes < 1) return 'less than a minute';
  const d = Math.floor(minutes / 1440);
  const h = Math.floor((minutes % 1440) / 60);
  const m = minutes % 60;
  if (d > 0) return h > 0 ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  return `${m} min`;
}

export const isCorrespondence = (state) => state?.pace === 'correspondence';

/**
 * The correspondence panel of the room screen. `screen` is the GameScreen
 * (its seat, colours and names); `send` sends a request and tells the
 * person about a refusal (a claim made too early shows the server's words).
 */
export class PacePanel {
  constructor(screen, send) {
    this.screen = screen;
    this.claiming = false;
    $('claim-win').addEventListener('click', async () => {
      if (this.claiming) return;
      this.claiming = true;
      $('claim-win').disabled = true;
      try {
        await send(msg.claimForfeit());
      } finally {
        this.claiming = false;
        this.tick();
      }
    });
  }

  /** The server's clock now, as estimated from the clocks in its states. */
  now() {
    return Date.now() + this.screen.serverOffset;
  }

  /** The game in play, or null (none, over, or between rounds). */
  gameInPlay() {
    const s = this.screen.state;
    const game = s?.game;
    return s?.phase === 'playing' && game && !game.result ? game : null;
  }

  render() {
    const s = this.screen.state;
    const on = isCorrespondence(s);
    $('pace-panel').hidden = !on;
    if (!on) return;
    const expiry = $('pace-expiry');
    expiry.hidden = !s.expires_at;
    expiry.textContent = s.expires_at
      ? `If nobody moves, this lobby ends with no winner on ${formatWhen(s.expires_at)}.`
      : '';
    this.tick();
  }

  /** Called often: the claim time passing enables the Claim win button. */
  tick() {
    const screen = this.screen;
    const s = screen.state;
    if (!isCorrespondence(s)) return;
    const game = this.gameInPlay();
    const button = $('claim-win');
    const text = $('pace-text');
    if (!game) {
      button.hidden = true;
      text.textContent = s.phase === 'waiting'
        ? 'A correspondence game: each player moves whenever they can. It starts as soon as the free seat is taken.'
        : 'A correspondence game: each player moves whenever they can.';
      return;
    }
    const mover = screen.seatOf(game.turn);
    const due = game.deadline;
    const passed = this.now() >= due;
    const when = formatWhen(due);
    const seated = screen.seat >= 0;
    const waiting = seated && mover !== screen.seat;
    button.hidden = !waiting;
    button.disabled = !passed || this.claiming;
    let words;
    if (!seated) {
      words = `${screen.nameOf(mover)} to move; the game can be claimed against them from ${when}.`;
    } else if (!waiting) {
      const opponent = screen.nameOf(1 - screen.seat);
      words = passed
        ? `Your move — the claim time has passed, so ${opponent} can claim a win now. Move to keep the game going.`
        : `Your move — take your time. ${opponent} can claim a win if you haven't moved by ${when} (${timeUntil(due, this.now())} from now).`;
    } else {
      const name = screen.nameOf(mover);
      words = passed
        ? `${name} has not moved by the claim time: you can claim a win now, or wait for their move.`
        : `Waiting for ${name}'s move. You can claim a win if they haven't moved by ${when}.`;
    }
    if (text.textContent !== words) text.textContent = words;
  }
}
