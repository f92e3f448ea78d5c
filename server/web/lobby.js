// lobby.js — the home screen (create a lobby with its options and pace, join
// or watch by code, the guest's name) and the invite panel.

import { correspondenceHelp, rulesHelp } from './help.js';
import { qrSvg } from './qr.js';
import {
  BOT_LEVELS, PACES, RULE_SETS, SERIES_LENGTHS, STAKE_MAX, STAKE_MIN, ruleSetLabel, seriesHint, seriesLabel,
} from './protocol.js';

const $ = (id) => document.getElementById(id);

/** Lobby codes are read in any case, ignoring spaces (PROTOCOL.md §11). */
export function normaliseCode(text) {
  return text.replace(/\s+/g, '').toUpperCase();
}

/** The stake field: empty or 0 is free (0); 10 to 1,000 as is; else null. */
export function readStake(text) {
  const trimmed = String(text ?? '').trim();
  if (trimmed === '') return 0;
  const n = Number(trimmed);
  if (!Number.isInteger(n)) return null;
  if (n === 0) return 0;
  return n >= STAKE_MIN && n <= STAKE_MAX ? n : null;
}

export class LobbyScreen {
  /**
   * @param {{ create(options): Promise, join(code): Promise, watch(code): Promise }} actions
   */
  constructor(actions) {
    this.actions = actions;

    const ruleSet = $('rule-set');
    for (const { value, label } of RULE_SETS) ruleSet.append(new Option(label, value));
    rulesHelp($('create-help'), ruleSet.value);
    ruleSet.addEventListener('change', () => rulesHelp($('create-help'), ruleSet.value));
    const lengths = $('series-lengths');
    const words = [];
    for (const n of SERIES_LENGTHS) {
      const label = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'radio';
      input.name = 'series_length';
      input.value = String(n);
      input.checked = n === 1;
      const text = document.createElement('span');
      words.push([n, text]);
      label.append(input, ' ', text);
      lengths.append(label);
    }
    // Short labels that fit a phone; what the chosen one means, under them.
    const hint = document.createElement('p');
    hint.id = 'series-hint';
    hint.className = 'hint series-hint';
    hint.setAttribute('aria-live', 'polite');
    lengths.after(hint);
    const describe = () => {
      for (const [n, text] of words) text.textContent = seriesLabel(n, ruleSet.value);
      const chosen = Number(document.querySelector('input[name=series_length]:checked')?.value ?? 1);
      hint.textContent = seriesHint(chosen, ruleSet.value);
    };
    describe();
    ruleSet.addEventListener('change', describe);
    lengths.addEventListener('change', describe);
    // Live or correspondence: offered to everybody, guests too.
    const paces = $('paces');
    for (const { value, label: text } of PACES) {
      const label = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'radio';
      input.name = 'pace';
      input.value = value;
      input.checked = value === 'live';
      label.append(input, ` ${text}`);
      paces.append(label);
    }
    correspondenceHelp($('pace-help'));

    const stakeInput = $('stake');
    stakeInput.addEventListener('input', () => stakeInput.setCustomValidity(''));
    $('create-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const stake = readStake(stakeInput.value);
      if (stake === null) {
        stakeInput.setCustomValidity(`Leave empty or 0 for a free lobby, or stake ${STAKE_MIN} to ${STAKE_MAX} Bold Points.`);
        stakeInput.reportValidity();
        return;
      }
      stakeInput.setCustomValidity('');
      const seriesLength = Number(document.querySelector('input[name=series_length]:checked').value);
      const pace = document.querySelector('input[name=pace]:checked')?.value ?? 'live';
      const drawRules = $('federation-draws').checked ? 'federation' : 'standard';
      this.busy(actions.create({ ruleSet: ruleSet.value, seriesLength, inviteOnly: $('invite-only').checked, stake, pace, drawRules }));
    });
    $('join-form').addEventListener('submit', (event) => {
      event.preventDefault();
      this.busy(actions.join(normaliseCode($('join-code').value), null));
    });
    $('watch-button').addEventListener('click', () => {
      const code = normaliseCode($('join-code').value);
      if (!code) {
        $('join-code').reportValidity();
        return;
      }
      this.busy(actions.watch(code, null));
    });
  }

  /**
   * Stakes need an account: a guest is not offered the field, only how to
   * sign in, and only where the server takes accounts (`accounts`);
   * elsewhere nothing about stakes is shown.
   */
  setGuest(guest, accounts) {
    $('stake-field').hidden = guest || !accounts;
    $('stake-guest-hint').hidden = !(guest && accounts);
    if (guest || !accounts) $('stake').value = '';
  }

  async busy(promise) {
    const buttons = document.querySelectorAll('#home button');
    for (const b of buttons) b.disabled = true;
    try {
      await promise;
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  show(prefillCode = '') {
    $('home').hidden = false;
    if (prefillCode) $('join-code').value = prefillCode;
  }

  hide() {
    $('home').hidden = true;
  }
}

/** The code and the copyable invite link, shown while a seat is free. */
export class InvitePanel {
  constructor(onCopied) {
    $('copy-invite').addEventListener('click', async () => {
      const input = $('invite-link');
      try {
        await navigator.clipboard.writeText(input.value);
      } catch {
        // No clipboard permission (or an insecure origin): select the
        // text so the person can copy it themselves.
        input.select();
        document.execCommand?.('copy');
      }
      onCopied();
    });
    $('share-invite').addEventListener('click', async () => {
      try {
        await navigator.share({
          title: 'Jumpgate',
          text: 'Play checkers with me on Jumpgate',
          url: $('invite-link').value,
        });
      } catch {
        // Closed without sharing: nothing to do.
      }
    });
  }

  render(state, seated) {
    const open = state.phase === 'waiting' && state.players.some((p) => p === null);
    $('invite-panel').hidden = !(open && seated);
    // The code alone does not open an invite-only lobby: offer only the link.
    $('invite-text-open').hidden = state.invite_only;
    $('invite-text-private').hidden = !state.invite_only;
    $('invite-code').textContent = state.invite_only ? '' : state.code;
    const link = inviteLink(state);
    $('invite-link').value = link;
    $('share-invite').hidden = typeof navigator.share !== 'function';
    const qr = $('invite-qr');
    if (qr.dataset.link !== link) {
      qr.dataset.link = link;
      qr.replaceChildren(qrSvg(link, 'QR code of the invite link'));
    }
  }
}

/** The link to share: the server's, or one built on this page's origin. */
export function inviteLink(state) {
  if (state.invite_link) return state.invite_link;
  const query = state.invite ? `?invite=${encodeURIComponent(state.invite)}` : '';
  return `${location.origin}/r/${state.code}${query}`;
}

/**
 * The "Play the computer" panel (rule set, level, ranked, Start), the
 * same-device start button and this device's record.
 */
export class SoloPanel {
  /**
   * @param {{ start(options): Promise }} actions
   */
  constructor(actions) {
    this.signedIn = false;
    const ruleSet = $('solo-rule-set');
    for (const { value, label } of RULE_SETS) ruleSet.append(new Option(label, value));
    const level = $('solo-level');
    for (const { value, label } of BOT_LEVELS) level.append(new Option(label, value));
    level.addEventListener('change', () => this.refresh());
    this.refresh();

    $('solo-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const ranked = !$('solo-ranked').disabled && $('solo-ranked').checked;
      this.busy(actions.start({ ruleSet: ruleSet.value, mode: 'computer', level: level.value, ranked }));
    });
    $('same-device-start').addEventListener('click', () => {
      this.busy(actions.start({ ruleSet: ruleSet.value, mode: 'same_device', ranked: false }));
    });
  }

  async busy(promise) {
    const buttons = [$('solo-start'), $('same-device-start')];
    for (const b of buttons) b.disabled = true;
    try {
      await promise;
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  /**
   * Ranked play needs an account (a signed-in token) and the Executive;
   * `accounts`: whether this server takes accounts at all.
   */
  setSignedIn(signedIn, accounts) {
    this.signedIn = signedIn;
    this.accounts = accounts ?? this.accounts ?? true;
    if (accounts !== undefined) learnAccounts(accounts);
    this.refresh();
  }

  refresh() {
    const executive = $('solo-level').value === 'executive';
    const box = $('solo-ranked');
    box.disabled = !(this.signedIn && executive);
    if (box.disabled) box.checked = false;
    const why = !this.signedIn
      ? (this.accounts === false
        ? 'Ranked games need an account, and this server has no sign-in: every game here is practice.'
        : 'Ranked games need a signed-in account; as a guest you play practice games.')
      : executive ? 'Ranked games against the Executive count for the leaderboard.'
        : 'Only games against the Executive can be ranked.';
    $('solo-ranked-hint').textContent = `${why} Using undo turns a ranked game into practice for good.`;
  }

  showRecord(text) {
    $('device-record').textContent = text;
  }
}

const LEADERBOARD_PAGE_SIZE = 20;

/**
 * Whether this server takes accounts (the welcome's `accounts`, as handed
 * to SoloPanel.setSignedIn), or null until the welcome came: without
 * sign-in there is no ranked play, so the leaderboards say so.
 */
let serverAccounts = null;
const accountWatchers = new Set();

function learnAccounts(accounts) {
  if (serverAccounts === accounts) return;
  serverAccounts = accounts;
  for (const watcher of accountWatchers) watcher();
}

/** The public leaderboards: a rule set selector, a table and paging. */
export class LeaderboardView {
  /**
   * @param {{ home(): void, fetch?: typeof fetch }} actions
   */
  constructor(actions) {
    this.fetch = actions.fetch ?? ((...args) => window.fetch(...args));
    this.page = 1;
    this.pages = 1;
    this.loading = 0;
    const ruleSet = $('leaderboard-rule-set');
    for (const { value, label } of RULE_SETS) ruleSet.append(new Option(label, value));
    ruleSet.addEventListener('change', () => this.load(1));
    $('leaderboard-prev').addEventListener('click', () => this.load(this.page - 1));
    $('leaderboard-next').addEventListener('click', () => this.load(this.page + 1));
    $('leaderboard-home').addEventListener('click', () => actions.home());
    // The welcome may come after the board was drawn: its words change then.
    accountWatchers.add(() => {
      if (this.shown) this.render(...this.shown);
    });
  }

  get visible() {
    return !$('leaderboards').hidden;
  }

  show(ruleSet) {
    $('leaderboards').hidden = false;
    if (ruleSet) $('leaderboard-rule-set').value = ruleSet;
    this.load(1);
    $('leaderboards-title').focus?.();
  }

  hide() {
    $('leaderboards').hidden = true;
  }

  async load(page) {
    const ruleSet = $('leaderboard-rule-set').value;
    const wanted = Math.max(1, page);
    const ticket = ++this.loading;
    $('leaderboard-page').textContent = 'Loading…';
    let data;
    try {
      const response = await this.fetch(
        `/api/leaderboards/${encodeURIComponent(ruleSet)}?page=${wanted}&per_page=${LEADERBOARD_PAGE_SIZE}`,
        { headers: { accept: 'application/json' } },
      );
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      data = await response.json();
    } catch {
      if (ticket !== this.loading) return;
      this.renderError();
      return;
    }
    if (ticket !== this.loading) return; // a later request is on its way
    this.render(ruleSet, data);
  }

  render(ruleSet, data) {
    this.shown = [ruleSet, data];
    const entries = Array.isArray(data.entries) ? data.entries : [];
    const perPage = data.per_page || LEADERBOARD_PAGE_SIZE;
    const total = Number(data.total) || 0;
    this.page = data.page || 1;
    this.pages = Math.max(1, Math.ceil(total / perPage));
    const body = $('leaderboard-body');
    body.replaceChildren();
    for (const e of entries) {
      const row = document.createElement('tr');
      for (const [i, value] of [e.place, e.name, e.points, e.wins, e.draws, e.losses, e.games].entries()) {
        const cell = document.createElement(i === 1 ? 'th' : 'td');
        if (i === 1) cell.scope = 'row';
        cell.textContent = String(value ?? '');
        row.append(cell);
      }
      body.append(row);
    }
    $('leaderboard-caption').textContent = `${ruleSetLabel(ruleSet)} — ${total} ${total === 1 ? 'player' : 'players'}`;
    $('leaderboard-table').hidden = entries.length === 0;
    const empty = $('leaderboard-empty');
    empty.hidden = entries.length > 0;
    const none = `No ranked games in ${ruleSetLabel(ruleSet)} yet`;
    empty.textContent = total > 0 ? 'This page is empty.'
      : serverAccounts === false
        ? `${none}: this server has no sign-in, so ranked play and its leaderboards are off here. Every game played here is practice.`
        : `${none}. Play a ranked game against the Executive to get on the board.`;
    $('leaderboard-page').textContent = `Page ${this.page} of ${this.pages}`;
    $('leaderboard-prev').disabled = this.page <= 1;
    $('leaderboard-next').disabled = this.page >= this.pages;
  }

  renderError() {
    this.shown = null;
    $('leaderboard-body').replaceChildren();
    $('leaderboard-table').hidden = true;
    const empty = $('leaderboard-empty');
    empty.hidden = false;
    empty.textContent = 'The leaderboard could not be loaded. Try again in a moment.';
    $('leaderboard-page').textContent = '';
    $('leaderboard-prev').disabled = this.page <= 1;
    $('leaderboard-next').disabled = true;
  }
}
