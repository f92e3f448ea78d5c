// app.js — starts the client: one connection, the screens (home with "My
// games", the preview of a lobby before joining it, lobby, solo game,
// leaderboards, and "this game is gone" for a lobby the server lost), the
// tab's title, and the page's address (`/` for the home screen and the
// leaderboard view, `/?solo={ID}` for a solo game, so that a reload resumes
// it, `/r/{CODE}` for a lobby and its preview, with `?invite=` for
// invite-only lobbies).
//
// It also keeps the page honest while the connection is down: the board (a
// lobby's or a solo game's) is covered by a "reconnecting" banner and takes
// no moves, and the buttons of game actions are disabled (they are refused,
// not queued: one made blind could land in a position that has changed);
// Leave only takes the page home, keeping the seat, since the server cannot
// be told. A lobby's clocks stand still on the page and the players'
// presence shows as unknown, since the page cannot know them.

import { Connection, isAccountToken } from './connection.js';
import { describeError } from './errors.js';
import { DeviceRecord, GameScreen, SoloScreen } from './game.js';
import { InvitePanel, LeaderboardView, LobbyScreen, SoloPanel, normaliseCode } from './lobby.js';
import { MyGames } from './mygames.js';
import { isCorrespondence } from './pace.js';
import { LobbyPreview } from './preview.js';
import * as msg from './protocol.js';

const $ = (id) => document.getElementById(id);
const WATCHING_KEY = 'jumpgate.watching'; // per tab: the code this tab watches
const SOUND_KEY = 'jumpgate.sound'; // 'off' when muted
const THEME_KEY = 'jumpgate.theme'; // 'dark' or 'light' when chosen over the system's
const LAST_LOBBY_KEY = 'jumpgate.last-lobby'; // { code, invite } of the lobby this device last sat in
const GONE_KEY = 'jumpgate.gone'; // per tab: codes of lobbies this tab was in that the server lost

/** A lobby code: 8 characters of the code alphabet, no 0, 1, I or O (PROTOCOL.md §11). */
const CODE_PATTERN = /^[2-9A-HJ-NP-Z]{8}$/;

/**
 * Whether a (normalised) code can name a lobby at all. One that cannot is
 * answered here, without asking the server, in words of its own.
 */
function wellFormed(code) {
  return CODE_PATTERN.test(code);
}

/** Codes of lobbies this tab was in and the server no longer has (newest last). */
function goneCodes() {
  try {
    const list = JSON.parse(sessionStorage.getItem(GONE_KEY));
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

function rememberGone(code) {
  const list = goneCodes().filter((c) => c !== code).concat(code).slice(-10);
  sessionStorage.setItem(GONE_KEY, JSON.stringify(list));
}

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

/** A notice floats over the page (it never pushes the board) and fades after a while. */
function notify(text, kind = 'error') {
  const box = $('notice');
  box.textContent = text;
  box.className = `notice ${kind}`;
  box.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { box.hidden = true; }, 6000);
}

/** A new screen starts clean: no notice left from the last one, scrolled to the top. */
function freshScreen() {
  clearTimeout(noticeTimer);
  $('notice').hidden = true;
  window.scrollTo(0, 0);
}

// ---------------------------------------------------------------------------
// Your turn: a short tone (unless muted) and the tab's title.

let audio = null;

function soundOn() {
  return localStorage.getItem(SOUND_KEY) !== 'off';
}

function showSoundSetting() {
  const on = soundOn();
  $('sound-toggle').setAttribute('aria-pressed', String(on));
  $('sound-toggle').textContent = on ? 'Sound on' : 'Sound off';
}

function beep() {
  if (!soundOn()) return;
  try {
    audio ??= new AudioContext();
    const at = audio.currentTime;
    const tone = audio.createOscillator();
    const gain = audio.createGain();
    tone.frequency.value = 740;
    gain.gain.setValueAtTime(0.0001, at);
    gain.gain.exponentialRampToValueAtTime(0.2, at + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, at + 0.3);
    tone.connect(gain).connect(audio.destination);
    tone.start(at);
    tone.stop(at + 0.32);
  } catch {
    // No audio here (or not allowed yet): the title still says it.
  }
}

$('sound-toggle').addEventListener('click', () => {
  localStorage.setItem(SOUND_KEY, soundOn() ? 'off' : 'on');
  showSoundSetting();
});
showSoundSetting();

/** The light or dark colours, as chosen here or else as the system prefers. */
function applyTheme() {
  const chosen = localStorage.getItem(THEME_KEY);
  const dark = chosen ? chosen === 'dark' : window.matchMedia('(prefers-color-scheme: dark)').matches;
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
  $('theme-toggle').setAttribute('aria-pressed', String(dark));
}

$('theme-toggle').addEventListener('click', () => {
  localStorage.setItem(THEME_KEY, document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
  applyTheme();
});
applyTheme();

/**
 * Sends a request; on refusal tells the person why and resolves to null.
 * An action of a lobby found gone is not worth a word: the gone screen says it.
 */
async function send(message) {
  try {
    return await connection.request(message);
  } catch (error) {
    if (error.code !== 'room_gone') notify(describeError(error.code, error.message));
    return null;
  }
}

// The tab's title: the screen's own, after "(N) Your move — " while N
// correspondence games have become yours to move since you last opened them.
let baseTitle = document.title;
let alertCount = 0;

function showTitle() {
  document.title = alertCount > 0 ? `(${alertCount}) Your move — ${baseTitle}` : baseTitle;
}

function setTitle(text) {
  baseTitle = text;
  showTitle();
}

let roomTitle = 'Jumpgate';

const game = new GameScreen({
  send,
  leave,
  home: () => homeKeepingSeat(),
  notify,
  turn: ({ mine, fresh }) => {
    setTitle(mine ? `● Your turn — ${roomTitle}` : roomTitle);
    if (fresh) beep();
  },
});
const invitePanel = new InvitePanel(() => notify('Invite link copied.', 'info'));
const lobby = new LobbyScreen({
  create,
  join: (code, invite) => (refuseMalformed(code) ? null : openLobby(code, invite)),
  watch: (code, invite) => (refuseMalformed(code) ? null : watch(code, invite)),
});
const preview = new LobbyPreview({ join, watch, cancel: () => goHome() });
const myGames = new MyGames({
  request: (message) => connection.request(message),
  open: (entry) => (entry.kind === 'solo' ? resumeSolo(false) : join(entry.code, null)),
  room: () => connection.room?.code ?? null,
  alerts: (count) => {
    alertCount = count;
    showTitle();
  },
  online: () => connection.ready,
});
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
  if ($('home').hidden) freshScreen();
  hideGone();
  game.hide();
  solo.hide();
  leaderboards.hide();
  preview.hide();
  soloPanel.showRecord(deviceRecord.text());
  lobby.show(prefill);
  setTitle('Jumpgate — checkers with friends');
  showResumeBanner();
  myGames.refresh();
}

/** What a lobby is, before taking its seat: Join or Watch. */
function showPreview(summary, invite) {
  if ($('preview').hidden) freshScreen();
  hideGone();
  lobby.hide();
  game.hide();
  solo.hide();
  leaderboards.hide();
  preview.show(summary, invite);
  setTitle(preview.title());
}

function showRoom() {
  if ($('room').hidden) freshScreen();
  hideGone();
  lobby.hide();
  solo.hide();
  leaderboards.hide();
  preview.hide();
  game.show();
}

function showSolo() {
  if ($('solo').hidden) freshScreen();
  hideGone();
  lobby.hide();
  game.hide();
  leaderboards.hide();
  preview.hide();
  solo.show();
}

// ---------------------------------------------------------------------------
// A lobby the server no longer has: after a restart of a server that keeps
// nothing (`--memory`), the page's re-entry is refused with `unknown_lobby`.

/** A code that cannot be a lobby's is answered at once, and never sent. */
function refuseMalformed(code) {
  if (wellFormed(code)) return false;
  notify(describeError('malformed_code'));
  return true;
}

/**
 * The words for a refused join, watch or `lobby_info` of `code`: a lobby
 * this device was in is "gone"; any other unknown code gets the server's
 * one sentence for "no such lobby, or not without its invite".
 */
function lobbyRefusal(error, code) {
  const known = goneCodes().includes(code) || lastLobby()?.code === code
    || myGames.games.some((g) => g.kind === 'lobby' && g.code === code);
  if (error.code === 'unknown_lobby' && known) {
    if (lastLobby()?.code === code) localStorage.removeItem(LAST_LOBBY_KEY);
    return describeError('lobby_gone');
  }
  return describeError(error.code, error.message);
}

function hideGone() {
  $('gone').hidden = true;
}

/**
 * Says plainly that the lobby this page was in is gone, and offers a new
 * lobby with the same rules or the home page. `state` is the lobby's last
 * state this page showed (null if none).
 */
function showGone(code, state, role) {
  freshScreen();
  game.hide();
  solo.hide();
  lobby.hide();
  preview.hide();
  leaderboards.hide();
  // A series in play is never closed for being idle (PROTOCOL.md §11): only
  // a restart that kept nothing loses it. A lobby between series may also
  // have been closed while nobody was connected to it.
  const playing = state && ['playing', 'break'].includes(state.phase);
  const what = role === 'spectator' ? 'the game you were watching' : playing ? 'your game' : 'the lobby';
  // A correspondence lobby is never closed for being idle, but it ends when
  // nobody has moved by its `expires_at` (PROTOCOL.md §12, "Expiry").
  const expired = isCorrespondence(state) && state.expires_at > 0 && Date.now() + game.serverOffset >= state.expires_at;
  const why = playing || !state || isCorrespondence(state) ? 'it was restarted without keeping its games'
    : 'it was restarted without keeping its games, or closed the lobby while nobody was connected to it';
  $('gone-text').textContent = expired
    ? `Lobby ${code} has expired: nobody moved before its expiry time, so it ended with no winner. `
      + (playing ? `The game in play was not scored${(state.stake ?? 0) > 0 ? ', the stakes were refunded in full,' : ''} and nothing` : 'Nothing')
      + ' counts in the records.'
    : `The connection dropped, and when it came back the server no longer had lobby ${code}: `
      + `${why}, so ${what} cannot go on. No result was recorded`
      + `${role === 'spectator' ? '' : ', and nobody is waiting for you there'}.`;
  $('gone-new').hidden = !state || role === 'spectator';
  $('gone-new').dataset.options = state ? JSON.stringify({
    ruleSet: state.rule_set,
    seriesLength: state.series_length,
    inviteOnly: Boolean(state.invite_only),
    stake: state.stake ?? 0,
    pace: state.pace ?? 'live',
    drawRules: state.draw_rules ?? 'standard',
  }) : '';
  $('gone').hidden = false;
  setTitle(`Jumpgate — lobby ${code} is gone`);
  $('gone-title').focus();
}

connection.addEventListener('room-gone', ({ detail: { code, role } }) => {
  const state = game.state?.code === code ? game.state : null;
  rememberGone(code);
  if (lastLobby()?.code === code) localStorage.removeItem(LAST_LOBBY_KEY);
  sessionStorage.removeItem(WATCHING_KEY);
  showGone(code, state, role);
});

$('gone-new').addEventListener('click', async () => {
  const options = JSON.parse($('gone-new').dataset.options || 'null');
  if (!options) {
    goHome();
    return;
  }
  $('gone-new').disabled = true;
  try {
    await create(options);
  } finally {
    $('gone-new').disabled = false;
  }
});
$('gone-home').addEventListener('click', () => goHome());

// ---------------------------------------------------------------------------
// The connection is down: a banner over the board, no moves, clocks stopped
// on this page, presence unknown, until the page is back in its room.

function showConnection(status) {
  const down = status !== 'online';
  const inRoom = down && Boolean(connection.room);
  const inSolo = down && !connection.room && Boolean(connection.solo);
  const title = status === 'outdated' ? 'This page is out of date for the server: reload it.' : 'Connection lost — reconnecting…';
  $('offline-overlay').hidden = !inRoom;
  $('offline-title').textContent = title;
  $('offline-detail').textContent = offlineDetail(game.state, game.seat >= 0);
  $('solo-offline-overlay').hidden = !inSolo;
  $('solo-offline-title').textContent = title;
  game.setOffline(inRoom);
  solo.setOffline(inSolo);
}

/**
 * The banner's second line, by what the room shows: only a live game in
 * play has a clock, which stands still on the page alone.
 */
function offlineDetail(state, seated) {
  const who = seated ? 'whether your opponent is here' : 'whether the players are here';
  if (state?.phase === 'playing' && state.game && !state.game.result) {
    if (isCorrespondence(state)) {
      return `No moves until the connection is back. The claim time and the lobby's expiry keep counting on the server, and ${who} is not known.`;
    }
    return `No moves until the connection is back. The clocks stand still on this page only: the server’s clock keeps running, and ${who} is not known.`;
  }
  if (state?.phase === 'break') {
    return `No action reaches the server until the connection is back. The next round starts there as usual, and ${who} is not known.`;
  }
  return `No action reaches the server until the connection is back, and ${who} is not known.`;
}

/**
 * On the home page, a game of yours that is still running elsewhere (you
 * went home without leaving) gets a banner leading back to it.
 */
async function showResumeBanner() {
  const banner = $('resume-banner');
  banner.hidden = true;
  let last;
  try {
    last = JSON.parse(localStorage.getItem(LAST_LOBBY_KEY));
  } catch {
    last = null;
  }
  if (!last?.code || connection.room) return;
  const query = new URLSearchParams({ format: 'json' });
  if (last.invite) query.set('invite', last.invite);
  let summary;
  try {
    const response = await fetch(`/r/${encodeURIComponent(last.code)}?${query}`, { headers: { accept: 'application/json' } });
    if (response.status === 404) localStorage.removeItem(LAST_LOBBY_KEY);
    if (!response.ok) return;
    summary = await response.json();
  } catch {
    return;
  }
  if (!['playing', 'break'].includes(summary.phase) || $('home').hidden || connection.room) return;
  // A correspondence game has no clock running: "My games" lists it.
  if (summary.pace === 'correspondence') return;
  const names = (summary.players ?? []).filter(Boolean).join(' and ');
  $('resume-text').textContent = `Your game in lobby ${summary.code} (${names}) is still being played, and its clock is running.`;
  const link = `/r/${summary.code}${last.invite ? `?invite=${encodeURIComponent(last.invite)}` : ''}`;
  $('resume-link').href = link;
  banner.hidden = false;
}

function showLeaderboards() {
  if (connection.room) {
    notify('Leave the lobby first to see the leaderboards.', 'info');
    return;
  }
  if (connection.solo) leaveSolo(false);
  hideGone();
  lobby.hide();
  game.hide();
  solo.hide();
  preview.hide();
  leaderboards.show(solo.state?.rule_set);
  setTitle('Jumpgate — leaderboards');
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

/** On loading `/?solo=ID`: back to that game, or a word on why not. */
async function resumeAddressedSolo() {
  try {
    await connection.request(msg.resumeSolo());
  } catch (error) {
    if (solo.visible || connection.room) return;
    history.replaceState(null, '', '/');
    notify(error.code === 'no_game_in_progress'
      ? 'That game is no longer on the server (it finished, or was left too long); start another below.'
      : describeError(error.code, error.message), 'info');
  }
}

/** Leaves the solo view: the game is detached (a ranked one can be resumed). */
function leaveSolo(goHome = true) {
  const wasShowing = connection.solo;
  connection.enterSolo(null);
  if (location.pathname === '/' && location.search) history.replaceState(null, '', '/');
  // Detach; a game the server has already closed needs nothing more.
  if (wasShowing) connection.request(msg.leave()).catch(() => {});
  if (goHome) showHome();
}

function goHome() {
  connection.forgetRoom();
  connection.hint = null;
  sessionStorage.removeItem(WATCHING_KEY);
  if (location.pathname !== '/') history.pushState(null, '', '/');
  showHome();
}

/**
 * Goes home from a correspondence game without leaving it (leaving would
 * forfeit the series): this page stops being in the room, the seat stays.
 */
function homeKeepingSeat() {
  connection.forgetRoom();
  connection.hint = null;
  sessionStorage.removeItem(WATCHING_KEY);
  connection.reconnect();
  if (location.pathname !== '/') history.pushState(null, '', '/');
  showHome();
}

/**
 * Opens a lobby by code or link: a player who holds a seat in it goes
 * straight back in; anyone else first sees what it is (`lobby_info`) and
 * chooses Join or Watch; a lobby with both seats taken opens for watching.
 * `fresh`: ask the server for this person's games first (a page opened on
 * a lobby's address); otherwise the last list is used.
 */
async function openLobby(code, invite, fresh = false) {
  if (!code) return;
  const listed = (games) => games.some((g) => g.kind === 'lobby' && g.code === code);
  let seated = listed(myGames.games);
  if (!seated && fresh) {
    const holds = await myGames.holdsSeat(code);
    // Not known (the list could not be read): the lobby this device last sat in.
    seated = holds ?? (lastLobby()?.code === code);
  }
  if (seated) {
    await join(code, invite);
    return;
  }
  connection.forgetRoom();
  connection.retarget(code);
  let answer;
  try {
    answer = await connection.request(msg.lobbyInfo(code, invite));
  } catch (error) {
    // A server that does not know `lobby_info` yet: join as before.
    if (error.code === 'unknown_message_type') {
      await join(code, invite);
      return;
    }
    showHome(code);
    notify(lobbyRefusal(error, code));
    return;
  }
  if (connection.room) return; // another screen took over meanwhile
  const summary = answer.lobby;
  if (!summary.players.some((p) => p === null)) {
    await watch(code, invite);
    return;
  }
  showPreview(summary, invite);
}

function lastLobby() {
  try {
    return JSON.parse(localStorage.getItem(LAST_LOBBY_KEY));
  } catch {
    return null;
  }
}

async function create(options) {
  connection.forgetRoom();
  connection.hint = null;
  await send(msg.createLobby(options));
}

// The room is remembered (for re-joining after a reconnect) from the first
// `state` that follows the `ack`, so a join still in flight is never sent twice.

/** Joins a lobby; a full one is opened for watching instead. */
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
    if (error.code === 'lobby_full') {
      // Both seats are taken: the game opens for watching straight away.
      await watch(code, invite);
      return;
    }
    showHome(code);
    notify(lobbyRefusal(error, code));
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
    notify(lobbyRefusal(error, code));
  }
}

/**
 * Leaves the lobby. Offline the server cannot be told, so Leave only takes
 * the page home and says so: the seat is kept (the home page leads back to
 * a live game still being played).
 */
async function leave() {
  if (connection.room && !connection.ready) {
    const code = connection.room.code;
    homeKeepingSeat();
    notify(`You are offline, so the server could not be told you left: your seat in lobby ${code} is kept. `
      + 'Open the lobby again to leave it once the connection is back.', 'info');
    return;
  }
  await send(msg.leave());
}

connection.addEventListener('status', ({ detail }) => {
  const status = $('connection-status');
  const words = { connecting: 'Connecting…', online: 'Online', offline: 'Offline — reconnecting…', outdated: 'Please reload the page' };
  status.textContent = words[detail] ?? detail;
  status.classList.toggle('offline', detail !== 'online');
  showConnection(detail);
});

let resumeAsked = false;

connection.addEventListener('welcome', ({ detail }) => {
  identity = detail;
  const signedIn = detail.guest === false;
  $('identity').textContent = signedIn ? `Signed in as ${detail.name}` : `You are ${detail.name}`;
  $('sign-out').hidden = !signedIn;
  soloPanel.setSignedIn(signedIn && isAccountToken(connection.token), connection.accounts);
  lobby.setGuest(!signedIn, connection.accounts);
  $('name-form').hidden = signedIn; // an account's name comes from its sign-in
  if (document.activeElement !== $('name-input')) $('name-input').value = detail.name;
  // Once per page load: a signed-in player's unfinished solo game (a ranked
  // one survives a refresh) comes back. No game is not worth a word.
  myGames.refresh();
  // A page whose address names a solo game (`/?solo=ID`, a reload) comes
  // back to it whoever plays it.
  const addressed = location.pathname === '/' && new URLSearchParams(location.search).has('solo');
  if (!resumeAsked && (signedIn || addressed) && location.pathname === '/' && !connection.room && !connection.hint) {
    resumeAsked = true;
    if (addressed) resumeAddressedSolo();
    else resumeSolo(true);
  }
});

connection.addEventListener('solo-state', ({ detail: state }) => {
  if (connection.room) return; // a lobby has the page now
  connection.enterSolo(state.id, state.version);
  // The address names the game, so that a reload comes back to it.
  const path = `/?solo=${encodeURIComponent(state.id)}`;
  if (!solo.visible && location.pathname !== '/') history.pushState(null, '', path);
  else if (location.pathname + location.search !== path) history.replaceState(null, '', path);
  if (!solo.visible) showSolo();
  setTitle(state.mode === 'computer' ? 'Jumpgate — you against the computer' : 'Jumpgate — two players, one screen');
  solo.update(state);
});

connection.addEventListener('solo-lost', () => {
  if (solo.visible) {
    showHome();
    notify('That game has closed on the server.', 'info');
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
  // From the home page the lobby gets its own history entry, so Back returns home.
  if (location.pathname === '/') history.pushState(null, '', path);
  else if (location.pathname + location.search !== path) history.replaceState(null, '', path);
  if (seated) localStorage.setItem(LAST_LOBBY_KEY, JSON.stringify({ code: state.code, invite: state.invite ?? null }));
  roomTitle = `Jumpgate — lobby ${state.code}`;
  setTitle(roomTitle);
  myGames.opened(state.code);
  showRoom();
  game.update(state, identity);
  showWaitHint(state, seated);
  invitePanel.render(state, seated);
});

/**
 * Both seats taken, the other player away, no series yet: how long the wait
 * can be, from what the server does (PROTOCOL.md §11): the seat is kept and
 * no clock starts against anyone who is away, so nothing is lost by waiting;
 * a lobby with nobody connected closes after the server's idle time (30
 * minutes unless configured otherwise).
 */
function showWaitHint(state, seated) {
  const away = state.players.find((p) => p && !p.connected);
  const waiting = seated && state.phase === 'waiting' && state.players.every(Boolean) && away && !isCorrespondence(state);
  $('wait-hint').hidden = !waiting;
  if (!waiting) return;
  $('wait-hint').textContent = `How long? As long as ${away.name} takes: their seat is kept, and no clock runs and nobody forfeits `
    + 'while they are away. The game starts the moment they open this lobby again, so keep this page open. '
    + 'You can leave at no cost (no series has started). If nobody is left in the lobby, the server closes it '
    + 'after a while (30 minutes unless it is set up otherwise).';
}

connection.addEventListener('left', () => {
  localStorage.removeItem(LAST_LOBBY_KEY);
  goHome();
});

connection.addEventListener('notice', ({ detail }) => {
  // The room we were in is gone (say, after a server restart).
  if (!connection.room && !$('room').hidden) showHome();
  notify(describeError(detail.code, detail.message));
});

// A room that moved to another server instance asks for no wait and needs
// no word: the page is back in it at once.
connection.addEventListener('shutdown', ({ detail }) => {
  if (detail.reconnect_after_ms > 0) notify('The server is restarting; reconnecting shortly.', 'info');
});

window.addEventListener('popstate', () => {
  if (location.pathname === '/' && preview.visible) {
    showHome();
    return;
  }
  if (location.pathname !== '/' || !connection.room) return;
  if (!connection.ready) {
    // Offline: home on this page only (nothing forfeits; the server was not told).
    leave();
    return;
  }
  if (isCorrespondence(game.state) && game.seat >= 0) {
    // Back from a correspondence game keeps the seat: it is played over days.
    connection.forgetRoom();
    connection.hint = null;
    connection.reconnect();
    showHome();
    return;
  }
  const inSeries = game.seat >= 0 && ['playing', 'break'].includes(game.state?.phase);
  if (inSeries && !window.confirm('Going back leaves this lobby and forfeits the whole series. Leave?')) {
    // Stay: put the lobby's address back.
    const room = connection.room;
    history.pushState(null, '', `/r/${room.code}${room.invite ? `?invite=${encodeURIComponent(room.invite)}` : ''}`);
    return;
  }
  leave();
});

$('name-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const name = $('name-input').value.trim();
  if (!name) {
    $('name-input').setCustomValidity('Type a name, or leave the one you have.');
    $('name-input').reportValidity();
    return;
  }
  $('name-input').setCustomValidity('');
  connection.chooseName(name);
});
$('name-input').addEventListener('input', () => $('name-input').setCustomValidity(''));

function route() {
  const match = location.pathname.match(/^\/r\/([^/]+)\/?$/);
  if (!match) {
    showHome();
    return;
  }
  const code = normaliseCode(decodeURIComponent(match[1]));
  const invite = new URLSearchParams(location.search).get('invite');
  if (!wellFormed(code)) {
    history.replaceState(null, '', '/');
    showHome(code);
    notify(describeError('malformed_code'));
    return;
  }
  connection.hint = code;
  if (sessionStorage.getItem(WATCHING_KEY) === code) watch(code, invite);
  else openLobby(code, invite, true);
}

const addressToken = takeTokenFromAddress();
if (addressToken && isAccountToken(addressToken)) connection.setAccountToken(addressToken);

route();
// After the first screen is up (a new screen clears older notices).
if (addressToken && !isAccountToken(addressToken)) {
  notify('That sign-in link did not carry an account token; you are playing as a guest.');
}
connection.start();
