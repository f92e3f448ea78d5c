// lobby.js — the home screen (create a lobby with its options, join or
// watch by code, the offer to watch a full lobby) and the invite panel.

import { RULE_SETS, SERIES_LENGTHS, STAKE_MAX, STAKE_MIN } from './protocol.js';

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
    this.fullCode = null;
    this.fullInvite = null;

    const ruleSet = $('rule-set');
    for (const { value, label } of RULE_SETS) ruleSet.append(new Option(label, value));
    const lengths = $('series-lengths');
    for (const n of SERIES_LENGTHS) {
      const label = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'radio';
      input.name = 'series_length';
      input.value = String(n);
      input.checked = n === 1;
      label.append(input, n === 1 ? ' One game' : ` Best of ${n}`);
      lengths.append(label);
    }

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
      this.busy(actions.create({ ruleSet: ruleSet.value, seriesLength, inviteOnly: $('invite-only').checked, stake }));
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
    $('full-watch').addEventListener('click', () => {
      this.busy(actions.watch(this.fullCode, this.fullInvite));
    });
    $('full-dismiss').addEventListener('click', () => this.hideFullOffer());
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
    this.hideFullOffer();
  }

  /** A join refused with `lobby_full`: offer to watch instead. */
  offerToWatch(code, invite) {
    this.fullCode = code;
    this.fullInvite = invite;
    $('full-code').textContent = code;
    $('full-offer').hidden = false;
    $('full-watch').focus();
  }

  hideFullOffer() {
    $('full-offer').hidden = true;
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
  }

  render(state, seated) {
    const open = state.phase === 'waiting' && state.players.some((p) => p === null);
    $('invite-panel').hidden = !(open && seated);
    $('invite-code').textContent = state.code;
    $('invite-link').value = inviteLink(state);
  }
}

/** The link to share: the server's, or one built on this page's origin. */
export function inviteLink(state) {
  if (state.invite_link) return state.invite_link;
  const query = state.invite ? `?invite=${encodeURIComponent(state.invite)}` : '';
  return `${location.origin}/r/${state.code}${query}`;
}
