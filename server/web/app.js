// app.js — starts the client: one connection, the two screens, and the
// page's address (`/` for the home screen, `/r/{CODE}` for a lobby, with
// `?invite=` for invite-only lobbies).

import { Connection, isAccountToken } from './connection.js';
import { describeError } from './errors.js';
import { GameScreen } from './game.js';
import { InvitePanel, LobbyScreen, normaliseCode } from './lobby.js';
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

function showHome(prefill = '') {
  game.hide();
  lobby.show(prefill);
  document.title = 'Jumpgate — checkers with friends';
}

function showRoom() {
  lobby.hide();
  game.show();
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

connection.addEventListener('welcome', ({ detail }) => {
  identity = detail;
  $('identity').textContent = detail.guest === false ? `Signed in as ${detail.name}` : `You are ${detail.name}`;
  $('sign-out').hidden = detail.guest !== false;
});

connection.addEventListener('account-rejected', ({ detail }) => {
  notify(`Your sign-in was not accepted (${detail.message || 'invalid token'}); you are playing as a guest.`);
});

async function signOut() {
  if (connection.room) {
    const inSeries = game.seat >= 0 && ['playing', 'break'].includes(game.state?.phase);
    if (inSeries && !window.confirm('Signing out leaves this lobby and forfeits the series. Sign out?')) return;
    await send(msg.leave());
  }
  sessionStorage.removeItem(WATCHING_KEY);
  identity = null;
  $('sign-out').hidden = true;
  $('identity').textContent = '';
  if (location.pathname !== '/') history.pushState(null, '', '/');
  showHome();
  connection.signOut();
  notify('Signed out; you are playing as a guest.', 'info');
}

$('sign-out').addEventListener('click', () => signOut());

connection.addEventListener('state', ({ detail: state }) => {
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

connection.addEventListener('shutdown', () => notify('The server is restarting; reconnecting shortly.', 'info'));

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
