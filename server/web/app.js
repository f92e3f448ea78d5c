// app.js — starts the client: one connection, the screens (home, lobby,
// solo game, leaderboards), and the page's address (`/` for the home screen
// and the solo and leaderboard views, `/r/{CODE}` for a lobby, with
// `?invite=` for invite-only lobbies).

import { Connection, isAccountToken } from './connection.js';
import { describeError } from './errors.js';
import { DeviceRecord, GameScreen, SoloScreen } from './game.js';
import { InvitePanel, LeaderboardView, LobbyScreen, SoloPanel, normaliseCode } from './lobby.js';
import * as msg from './protocol.js';

const $ = (id) => document.getElementById(id);
const WATCHING_KEY = 'jumpgate.watching'; // per tab: the code this tab watches

/**
 * Sign-in from the hosting site: `?token=JWT` (or `#token=JWT`) in the
 * address is an account token. Keep it as this page's identity (in place of
 * any guest token) and take it out of the address bar at once.
 */
function takeTokenFromAddress() {
  const url = new URL(location.href);
  const hash = new URLSearchParams(url.hash.replace(/^#/, ''));
  const token = url.searchParams.get('token') || hash.get('token');
  if (!url.searchParams.has('token') && !hash.has('token')) return null;
  url.searchParams.delete('token');
  hash.delete('token');
  const rest = hash.toString();
  url.hash = rest ? `#${rest}` : '';
  history.replaceState(history.state, '', url.pathname + url.search + url.hash);
  return token ? token.trim() : null;
}

const socketUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
const connection = new Connection(socketUrl);
let identity = null;
let noticeTimer = null;

function notify(text, kind = 'error') {
  const box = $('notice');
  box.textContent = text;
  box.className = `notice ${kind}`;
  box.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { box.hidden = true; }, 6000);
}

/** Sends a request; on refusal tells the person why and resolves to null. */
async function send(message) {
  try {
    return await connection.request(message);
  } catch (error) {
    notify(describeError(error.code, error.message));
    return null;
  }
}

const game = new GameScreen({ send, leave, notify });
const invitePanel = new InvitePanel(() => notify('Invite link copied.', 'info'));
const lobby = new LobbyScreen({ create, join, watch });
const deviceRecord = new DeviceRecord();
const soloPanel = new SoloPanel({ start: startSolo });
const solo = new SoloScreen({
  send,
  request: (message) => connection.request(message),
  notify,
  newGame: startSolo,
  home: () => leaveSolo(),
  finished: () => soloPanel.showRecord(deviceRecord.text()),
});
const leaderboards = new LeaderboardView({ home: () => showHome() });
soloPanel.showRecord(deviceRecord.text());

function showHome(prefill = '') {
  game.hide();
  solo.hide();
  leaderboards.hide();
  soloPanel.showRecord(deviceRecord.text());
  lobby.show(prefill);
  document.title = 'Jumpgate — checkers with friends';
}

function showRoom() {
  lobby.hide();
  solo.hide();
  leaderboards.hide();
  game.show();
}

function showSolo() {
  lobby.hide();
  game.hide();
  leaderboards.hide();
  solo.show();
}

function showLeaderboards() {
  if (connection.room) {
    notify('Leave the lobby first to see the leaderboards.', 'info');
    return;
  }
  if (connection.solo) leaveSolo(false);
  lobby.hide();
  game.hide();
  solo.hide();
  leaderboards.show(solo.state?.rule_set);
  document.title = 'Jumpgate — leaderboards';
}

/** Sentences for refusals of `start_solo` (the generic ones speak of lobbies). */
const SOLO_START_ERRORS = {
  account_required: 'Ranked games need a signed-in account. Untick “Ranked” to play a practice game.',
  invalid_options: 'Only games against the Executive can be ranked.',
  not_now: 'You have a ranked game in progress: finish it or resign it before starting another.',
  already_in_lobby: 'You are in a lobby: leave it before playing the computer.',
};

/** Starts a solo game; its `solo_state` then shows it. */
async function startSolo(options) {
  try {
    await connection.request(msg.startSolo(options));
  } catch (error) {
    notify(SOLO_START_ERRORS[error.code] ?? describeError(error.code, error.message));
    // A ranked game in progress: bring it back so it can be finished.
    if (error.code === 'not_now' && !solo.visible) resumeSolo(false);
  }
}

/** Attaches this page to the person's unfinished solo game, if there is one. */
async function resumeSolo(quiet = true) {
  try {
    await connection.request(msg.resumeSolo());
  } catch (error) {
    if (!quiet && error.code !== 'no_game_in_progress') notify(describeError(error.code, error.message));
  }
}

/** Leaves the solo view: the game is detached (a ranked one can be resumed). */
function leaveSolo(goHome = true) {
  const wasShowing = connection.solo;
  connection.enterSolo(null);
  // Detach; a game the server has already closed needs nothing more.
  if (wasShowing) connection.request(msg.leave()).catch(() => {});
  if (goHome) showHome();
}

function goHome() {
  connection.forgetRoom();
  connection.hint = null;
  sessionStorage.removeItem(WATCHING_KEY);
  history.pushState(null, '', '/');
  showHome();
}

async function create(options) {
  connection.forgetRoom();
  connection.hint = null;
  await send(msg.createLobby(options));
}

// The room is remembered (for re-joining after a reconnect) from the first
// `state` that follows the `ack`, so a join still in flight is never sent twice.

/** Joins a lobby; a full one is offered for watching instead. */
async function join(code, invite) {
  if (!code) return;
  connection.forgetRoom();
  connection.retarget(code);
  try {
    await connection.request(msg.joinLobby(code, invite));
    sessionStorage.removeItem(WATCHING_KEY);
  } catch (error) {
    connection.forgetRoom();
    if (error.code === 'already_in_lobby') {
      notify(describeError(error.code, error.message));
      return;
    }
    showHome(code);
    if (error.code === 'lobby_full') lobby.offerToWatch(code, invite);
    else notify(describeError(error.code, error.message));
  }
}

async function watch(code, invite) {
  if (!code) return;
  connection.forgetRoom();
  connection.retarget(code);
  try {
    await connection.request(msg.watch(code, invite));
    sessionStorage.setItem(WATCHING_KEY, code);
  } catch (error) {
    connection.forgetRoom();
    showHome(code);
    notify(describeError(error.code, error.message));
  }
}

async function leave() {
  await send(msg.leave());
}

connection.addEventListener('status', ({ detail }) => {
  const status = $('connection-status');
  const words = { connecting: 'Connecting…', online: 'Online', offline: 'Offline — reconnecting…', outdated: 'Please reload the page' };
  status.textContent = words[detail] ?? detail;
  status.classList.toggle('offline', detail !== 'online');
});

let resumeAsked = false;

connection.addEventListener('welcome', ({ detail }) => {
  identity = detail;
  const signedIn = detail.guest === false;
  $('identity').textContent = signedIn ? `Signed in as ${detail.name}` : `You are ${detail.name}`;
  $('sign-out').hidden = !signedIn;
  soloPanel.setSignedIn(signedIn && isAccountToken(connection.token));
  // Once per page load: a signed-in player's unfinished solo game (a ranked
  // one survives a refresh) comes back. No game is not worth a word.
  if (!resumeAsked && signedIn && location.pathname === '/' && !connection.room && !connection.hint) {
    resumeAsked = true;
    resumeSolo(true);
  }
});

connection.addEventListener('solo-state', ({ detail: state }) => {
  if (connection.room) return; // a lobby has the page now
  connection.enterSolo(state.id, state.version);
  if (!solo.visible) {
    if (location.pathname !== '/') history.pushState(null, '', '/');
    showSolo();
  }
  document.title = state.mode === 'computer' ? 'Jumpgate — you against the computer' : 'Jumpgate — two players, one screen';
  solo.update(state);
});

connection.addEventListener('solo-lost', () => {
  if (solo.visible) {
    notify('That game has closed on the server.', 'info');
    showHome();
  }
});

$('open-leaderboards').addEventListener('click', () => showLeaderboards());

connection.addEventListener('account-rejected', ({ detail }) => {
  notify(`Your sign-in was not accepted (${detail.message || 'invalid token'}); you are playing as a guest.`);
});

async function signOut() {
  if (connection.room) {
    const inSeries = game.seat >= 0 && ['playing', 'break'].includes(game.state?.phase);
    if (inSeries && !window.confirm('Signing out leaves this lobby and forfeits the series. Sign out?')) return;
    await send(msg.leave());
  }
  if (connection.solo) leaveSolo(false);
  sessionStorage.removeItem(WATCHING_KEY);
  identity = null;
  soloPanel.setSignedIn(false);
  $('sign-out').hidden = true;
  $('identity').textContent = '';
  if (location.pathname !== '/') history.pushState(null, '', '/');
  showHome();
  connection.signOut();
  notify('Signed out; you are playing as a guest.', 'info');
}

$('sign-out').addEventListener('click', () => signOut());

connection.addEventListener('state', ({ detail: state }) => {
  connection.enterSolo(null); // a lobby takes the page over from any solo game
  const seated = state.players.some((p) => p && p.id === identity?.id);
  connection.enterRoom({
    code: state.code,
    invite: state.invite ?? connection.room?.invite ?? null,
    role: seated ? 'player' : 'spectator',
  });
  const path = `/r/${state.code}${state.invite ? `?invite=${encodeURIComponent(state.invite)}` : ''}`;
  if (location.pathname + location.search !== path) history.replaceState(null, '', path);
  document.title = `Jumpgate — lobby ${state.code}`;
  showRoom();
  game.update(state, identity);
  invitePanel.render(state, seated);
});

connection.addEventListener('left', () => goHome());

connection.addEventListener('notice', ({ detail }) => {
  notify(describeError(detail.code, detail.message));
  // The room we were in is gone (say, after a server restart).
  if (!connection.room && !$('room').hidden) showHome();
});

// A room that moved to another server instance asks for no wait and needs
// no word: the page is back in it at once.
connection.addEventListener('shutdown', ({ detail }) => {
  if (detail.reconnect_after_ms > 0) notify('The server is restarting; reconnecting shortly.', 'info');
});

window.addEventListener('popstate', () => {
  if (location.pathname === '/' && connection.room) leave();
});

function route() {
  const match = location.pathname.match(/^\/r\/([^/]+)\/?$/);
  if (!match) {
    showHome();
    return;
  }
  const code = normaliseCode(decodeURIComponent(match[1]));
  const invite = new URLSearchParams(location.search).get('invite');
  connection.hint = code;
  if (sessionStorage.getItem(WATCHING_KEY) === code) watch(code, invite);
  else join(code, invite);
}

const addressToken = takeTokenFromAddress();
if (addressToken && isAccountToken(addressToken)) connection.setAccountToken(addressToken);
else if (addressToken) notify('That sign-in link did not carry an account token; you are playing as a guest.');

route();
connection.start();
