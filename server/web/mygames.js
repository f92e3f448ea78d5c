// mygames.js — "My games" on the home page: your unfinished lobbies and solo
// game (`my_games`), games where it is your move first; asked after welcome,
// on coming home, every 25 seconds and when the tab is shown again. A
// correspondence game that becomes your move while you are not in it is
// counted for the tab's title ("(1) Your move — …") until you open it.

import { formatWhen } from './pace.js';
import * as msg from './protocol.js';
import { levelLabel, paceLabel, ruleSetLabel } from './protocol.js';

const $ = (id) => document.getElementById(id);

/** How often the list is asked for while the page is open. */
export const POLL_MS = 25_000;

/** Your games, yours to move first; otherwise in the server's order. */
export function sortGames(games) {
  return games
    .map((game, i) => ({ game, i }))
    .sort((a, b) => Number(b.game.your_turn) - Number(a.game.your_turn) || a.i - b.i)
    .map(({ game }) => game);
}

/** The lines shown for one game: what it is, and where it stands. */
export function describeGame(game) {
  const solo = game.kind === 'solo';
  const correspondence = game.pace === 'correspondence';
  const who = game.opponent
    ? (solo ? `against the ${levelLabel(game.opponent)}` : `against ${game.opponent}`)
    : (solo ? 'two players, one screen' : 'waiting for an opponent');
  const what = `${ruleSetLabel(game.rule_set)} · ${solo ? 'solo' : paceLabel(game.pace)} · ${who}`;
  const times = [];
  if (game.phase === 'playing' && game.deadline && correspondence) {
    times.push(game.your_turn
      ? `Move by ${formatWhen(game.deadline)}, or your opponent can claim a win`
      : `You can claim a win if they haven't moved by ${formatWhen(game.deadline)}`);
  } else if (game.phase === 'playing' && !solo) {
    times.push(game.your_turn ? 'Your move is on the clock' : 'In play');
  } else if (game.phase === 'break') {
    times.push('Between rounds');
  } else if (game.phase === 'finished' || game.phase === 'ended') {
    times.push('Series over');
  }
  if (game.last_move_at) times.push(`last move ${formatWhen(game.last_move_at)}`);
  const expiry = correspondence && game.expires_at ? `Ends with no winner on ${formatWhen(game.expires_at)} if nobody moves.` : '';
  return { what, times: times.join(' · '), expiry };
}

export class MyGames {
  /**
   * @param {{ request(message): Promise, open(game): void, room(): string|null,
   *           alerts(count): void, online(): boolean }} actions
   * `request` rejects on refusal; `room` names the lobby this page is in;
   * `alerts` hears how many games newly wait for your move.
   */
  constructor(actions) {
    this.actions = actions;
    this.games = [];
    this.turns = null; // code -> your_turn, as last seen (null: never asked)
    this.alerted = new Set();
    this.asking = null;
    $('my-games').addEventListener('click', (event) => {
      const button = event.target.closest('button[data-code]');
      const game = button && this.games.find((g) => g.code === button.dataset.code);
      if (game) this.actions.open(game);
    });
    setInterval(() => this.poll(), POLL_MS);
    document.addEventListener('visibilitychange', () => this.poll());
    window.addEventListener('focus', () => this.poll());
  }

  /** Asks again unless offline (a reconnection asks anyway, after its welcome). */
  poll() {
    if (this.actions.online()) this.refresh();
  }

  /** Asks for the list (one question at a time); resolves to the games, or null. */
  refresh() {
    this.asking ??= this.actions.request(msg.myGames())
      .then((answer) => {
        this.update(Array.isArray(answer.games) ? answer.games : []);
        return this.games;
      })
      .catch(() => null)
      .finally(() => { this.asking = null; });
    return this.asking;
  }

  /** Whether this person holds a seat in lobby `code` (null when it could not be asked). */
  async holdsSeat(code) {
    const games = await this.refresh();
    if (!games) return null;
    return games.some((g) => g.kind === 'lobby' && g.code === code);
  }

  update(games) {
    const first = this.turns === null;
    const before = this.turns ?? new Map();
    const here = this.actions.room();
    this.games = sortGames(games);
    this.turns = new Map(this.games.map((g) => [g.code, g.your_turn]));
    for (const g of this.games) {
      const newly = g.your_turn && !first && before.get(g.code) !== true;
      if (newly && g.pace === 'correspondence' && g.code !== here) this.alerted.add(g.code);
    }
    for (const code of [...this.alerted]) {
      if (!this.turns.get(code) || code === here) this.alerted.delete(code);
    }
    this.render();
    this.actions.alerts(this.alerted.size);
  }

  /** The game was opened: its alert is done with. */
  opened(code) {
    if (this.alerted.delete(code)) this.actions.alerts(this.alerted.size);
  }

  get alertCount() {
    return this.alerted.size;
  }

  render() {
    const list = $('my-games');
    const panel = $('my-games-panel');
    panel.hidden = this.games.length === 0;
    const waiting = this.games.filter((g) => g.your_turn).length;
    $('my-games-summary').textContent = waiting === 0
      ? 'None of your games waits for your move.'
      : `${waiting} ${waiting === 1 ? 'game waits' : 'games wait'} for your move.`;
    list.replaceChildren(...this.games.map((game) => this.entry(game)));
  }

  entry(game) {
    const item = document.createElement('li');
    item.className = `my-game${game.your_turn ? ' your-turn' : ''}`;
    item.dataset.code = game.code;
    const { what, times, expiry } = describeGame(game);
    const text = document.createElement('div');
    text.className = 'my-game-text';
    const head = document.createElement('p');
    head.className = 'my-game-head';
    const code = document.createElement('span');
    code.className = 'code';
    code.textContent = game.kind === 'solo' ? 'Solo game' : game.code;
    head.append(code);
    if (game.your_turn) {
      const mark = document.createElement('span');
      mark.className = 'badge turn';
      mark.textContent = 'Your turn';
      head.append(' ', mark);
    }
    const about = document.createElement('p');
    about.className = 'my-game-what';
    about.textContent = what;
    text.append(head, about);
    if (times) {
      const when = document.createElement('p');
      when.className = 'my-game-when';
      when.textContent = times;
      text.append(when);
    }
    if (expiry) {
      const ends = document.createElement('p');
      ends.className = 'my-game-expiry';
      ends.textContent = expiry;
      text.append(ends);
    }
    const open = document.createElement('button');
    open.type = 'button';
    open.dataset.code = game.code;
    open.className = game.your_turn ? 'primary' : '';
    open.textContent = game.your_turn ? 'Play' : 'Open';
    const name = game.kind === 'solo' ? 'your solo game' : `lobby ${game.code}`;
    open.setAttribute('aria-label', `${open.textContent} ${name}${game.your_turn ? ' (your turn)' : ''}`);
    item.append(text, open);
    return item;
  }
}
