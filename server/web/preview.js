// preview.js — the screen shown before taking a seat by code or invite link:
// what the lobby is (`lobby_info`: rule set, pace, series, stake, host, and
// whether the host is away), with Join and Watch, so whoever opens a link
// sees what they accept, and whether they would have to wait.

import { formatWhen } from './pace.js';
import { paceLabel, ruleSetLabel, seriesHint, seriesLabel } from './protocol.js';

const $ = (id) => document.getElementById(id);

/** The series as the create form names and explains it: "Best of 3 — First to 2 wins…". */
function seriesText(lobby) {
  const label = seriesLabel(lobby.series_length, lobby.rule_set);
  const hint = seriesHint(lobby.series_length, lobby.rule_set);
  return hint.startsWith(label) ? hint : `${label} — ${hint}`;
}

function paceText(lobby) {
  return lobby.pace === 'correspondence'
    ? 'Correspondence — days per move: each player moves whenever they can'
    : 'Live — 45 seconds a move';
}

export class LobbyPreview {
  /**
   * @param {{ join(code, invite): Promise, watch(code, invite): Promise, cancel(): void }} actions
   */
  constructor(actions) {
    this.lobby = null;
    this.invite = null;
    const busy = async (promise) => {
      for (const b of document.querySelectorAll('#preview button')) b.disabled = true;
      try {
        await promise;
      } finally {
        for (const b of document.querySelectorAll('#preview button')) b.disabled = false;
      }
    };
    $('preview-join').addEventListener('click', () => busy(actions.join(this.lobby.code, this.invite)));
    $('preview-watch').addEventListener('click', () => busy(actions.watch(this.lobby.code, this.invite)));
    $('preview-cancel').addEventListener('click', () => actions.cancel());
  }

  get visible() {
    return !$('preview').hidden;
  }

  /** The tab's title for this lobby. */
  title() {
    const lobby = this.lobby;
    return `Jumpgate — ${paceLabel(lobby.pace).toLowerCase()} ${ruleSetLabel(lobby.rule_set)}, lobby ${lobby.code}`;
  }

  show(lobby, invite) {
    this.lobby = lobby;
    this.invite = invite ?? null;
    $('preview').hidden = false;
    const host = lobby.host_name ?? lobby.players.find(Boolean) ?? null;
    $('preview-title').textContent = host ? `${host} invites you to play` : `Lobby ${lobby.code}`;
    const rows = [
      ['Lobby', lobby.code],
      ['Rules', ruleSetLabel(lobby.rule_set)],
      ['Pace', paceText(lobby)],
      ['Series', seriesText(lobby)],
      ['Stake', lobby.stake > 0 ? `${lobby.stake.toLocaleString('en')} Bold Points each` : 'None (a free game)'],
      ['Host', lobby.host_name ? `${lobby.host_name}${lobby.host_away ? ' — away: not connected right now' : ''}` : 'nobody yet'],
    ];
    if (lobby.invite_only) rows.push(['Access', 'Invite-only']);
    if (lobby.spectators > 0) rows.push(['Watching', String(lobby.spectators)]);
    if (lobby.expires_at) rows.push(['Ends', `${formatWhen(lobby.expires_at)}, with no winner, if nobody moves before`]);
    const list = $('preview-details');
    list.replaceChildren();
    for (const [term, value] of rows) {
      const dt = document.createElement('dt');
      dt.textContent = term;
      const dd = document.createElement('dd');
      dd.textContent = value;
      list.append(dt, dd);
    }
    const free = lobby.players.some((p) => p === null);
    const away = Boolean(lobby.host_away && lobby.host_name);
    $('preview-join').hidden = !free;
    $('preview-note').textContent = free
      ? (lobby.pace === 'correspondence'
        ? `Joining starts the series at once; ${host ?? 'the host'} moves first. No clock runs out on you: each side has days to move.`
        : away
          ? `${lobby.host_name} is away just now (their page is closed or offline). You can still take the seat: `
            + 'the game starts, 45 seconds a move, the moment they come back, and no clock runs until then.'
          : 'Joining takes the free seat; the game starts, 45 seconds a move, when both players are here.')
      : 'Both seats are taken: you can watch.';
    $('preview-title').textContent = host
      ? `${host} invites you to play${away && free && lobby.pace !== 'correspondence' ? ' (away just now)' : ''}`
      : `Lobby ${lobby.code}`;
    (free ? $('preview-join') : $('preview-watch')).focus();
  }

  hide() {
    $('preview').hidden = true;
    this.lobby = null;
  }
}
