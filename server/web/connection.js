// connection.js — the WebSocket to the server: hello with a remembered guest
// token, numbered requests answered by ack/error, the room kept from protocol
// 2's snapshot and events (with `resync` on a missed version), and
// reconnecting with back-off and re-joining the room (PROTOCOL.md §3, §4, §10,
// §21), at once when the room has moved to another server instance (close
// 4001) and again after a back-off while it is between instances
// (`room_unavailable`). In a room, a socket that has been silent for a while
// is asked a question (`lobby_info`); one that does not answer in time counts
// as dropped, so that a server that froze or a network that went away
// without closing the socket shows as offline rather than as a quiet game.
//
// The room applier is the @jumpgate/client package's (clients/typescript),
// bundled as jumpgate-client.js. This file keeps its own connection rather
// than the package's Session because a page's needs differ: it never gives
// up reconnecting, keeps `seq` counting across reloads in localStorage, and
// changes identity (name, account, sign-out) in place.

import { V2RoomView, gapSince, legalMoves } from './jumpgate-client.js';
import { SUBPROTOCOLS, hello, joinLobby, lobbyInfo, ping, protocolOf, resumeSolo, resync, watch } from './protocol.js';

const TOKEN_KEY = 'jumpgate.token';
const NAME_KEY = 'jumpgate.name';
const SOLO_KEY = 'jumpgate.solo';
const SEQ_KEY = 'jumpgate.seq';
const MAX_SEQ = 0xffff_ff00;

/** The close code for "the room moved to another server instance": come back at once. */
const CLOSE_ROOM_MOVED = 4001;
/** Silence from the server, in a room, after which it is asked whether it is still there. */
const QUIET_MS = 5_000;
/** How long that question may go unanswered before the socket counts as dropped. */
const PROBE_MS = 4_000;
/** Reconnections after `room_unavailable` before the refusal stands (about 25 s of waits). */
const MAX_ROOM_RETRIES = 6;

/** Requests that enter a room: repeatable by nature (§10). */
const ENTERING = new Set(['join_lobby', 'watch', 'resume_solo']);
/** Lobby actions the server applies once however often they arrive; a repeated `leave` is answered again (§4). */
const LOBBY_ACTIONS = new Set([
  'move', 'offer_draw', 'accept_draw', 'decline_draw', 'resign', 'next_round', 'rematch', 'end_match', 'leave',
  'claim_forfeit',
]);
/**
 * Actions refused, not sent later, while a page in a room or a solo game is
 * not connected: one made blind could meet a position or a phase that has
 * changed by the time it arrives. (app.js lets Leave go home on the page.)
 */
const HELD_OFFLINE = new Set([...LOBBY_ACTIONS, 'undo']);
/** Questions that change nothing, so may always be asked again; each is answered by a message of its own type. */
const QUESTIONS = new Set(['lobby_info', 'my_games']);

/** Whether a JWT is an account token: its header names a key (`kid`), §3. */
export function isAccountToken(token) {
  if (!token) return false;
  try {
    const part = token.split('.')[0].replace(/-/g, '+').replace(/_/g, '/');
    const header = JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
    return typeof header?.kid === 'string' && header.kid !== '';
  } catch {
    return false;
  }
}

/** An error answer from the server, or a request lost with its connection. */
export class RequestError extends Error {
  constructor(code, message) {
    super(message || code);
    this.code = code;
  }
}

/**
 * A protocol 2 room as the page shows it: the snapshot's fields, with the
 * game's legal moves as a list of moves (`legal_moves`, each with `path`,
 * `captures`, `boost`, `teleports`) and `must_capture` always a list, the
 * shape protocol 1's `state` has. On the orbit board each move also has the
 * notation the server would give it, for the page to name two moves that
 * share their ends (PROTOCOL.md §20).
 */
export function roomState(room) {
  const state = { type: 'state', ...room };
  if (!room.game) return state;
  const {
    legal: _legal, legal_captures: _captures, legal_teleports: _teleports, legal_boosts: _boosts,
    legal_boost_teleports: _boostTeleports, ...game
  } = room.game;
  const moves = legalMoves(room.game);
  if (room.rule_set === 'orbit') {
    const ends = (m) => `${m.path[0]}-${m.path[m.path.length - 1]}`;
    for (const move of moves) {
      const shared = moves.some((other) => other !== move && ends(other) === ends(move));
      move.notation = shared ? move.path.join('-') : ends(move);
    }
  }
  state.game = { ...game, legal_moves: moves, must_capture: game.must_capture ?? [] };
  return state;
}

/**
 * Events (all `CustomEvent`s): `status` (detail: 'connecting' | 'online' |
 * 'offline' | 'outdated'), `welcome` (identity), `state` (room state),
 * `left` (code), `notice` (an error that answers no request of ours),
 * `room-gone` ({ code, role }: re-entering the room after a reconnection
 * was refused with `unknown_lobby`, so the server no longer has it; its
 * unanswered actions are rejected with `room_gone` rather than sent),
 * `shutdown`, `account-rejected` (the kept account token was refused with
 * `invalid_token`; the page carries on as a new guest), `solo-state` (the
 * state of this page's solo game), `solo-lost` (the solo game could not be
 * re-attached after a reconnect). `request` resolves with the `ack`, or
 * with the `lobby_info` or `my_games` that answers those questions.
 */
export class Connection extends EventTarget {
  constructor(url, storage = window.localStorage) {
    super();
    this.url = url;
    this.storage = storage;
    this.socket = null;
    this.identity = null;
    this.ready = false;
    this.waiters = [];
    this.pending = new Map(); // seq -> { message, resolve, reject, reentry }
    this.attempt = 0;
    /** Reconnections since the room last answered anything but `room_unavailable`. */
    this.roomRetries = 0;
    this.minDelay = 0;
    this.stopped = false;
    /** The room to re-enter after reconnecting: { code, invite, role }. */
    this.room = null;
    /** The lobby code this connection is meant for, before it is in it. */
    this.hint = null;
    /** The protocol the current socket speaks (2, or 1 with an older server). */
    this.protocol = 0;
    /** Protocol 2: the room, kept from its snapshot and events. */
    this.roomView = new V2RoomView();
    /** Protocol 2: the `resync` that is out ({ since }), until it is answered. */
    this.resyncing = null;
    /** Protocol 1: the newest room version shown. */
    this.version = 0;
    /** The id of the solo game this page shows, re-attached after reconnecting. */
    this.solo = null;
    /** The solo game shown before this page was loaded: routes the first connection. */
    this.lastSolo = storage.getItem(SOLO_KEY);
    this.soloVersion = 0;
    this.reconnectTimer = undefined;
    /** When the current socket last brought a message (performance.now()). */
    this.lastHeard = 0;
    /** The liveness question out on the current socket: { seq, at }, or null. */
    this.probe = null;
    /** The `seq`s of liveness questions whose answers are not this page's business. */
    this.probeSeqs = new Set();
    setInterval(() => this.checkAlive(), 1000);
  }

  /**
   * In a room or a solo game, asks a silent server a question (`lobby_info`,
   * or `ping` in a solo game), and treats a socket whose answer does not
   * come in time as dropped (the page shows "reconnecting" and opens a new one).
   */
  checkAlive() {
    const socket = this.socket;
    if (!this.ready || !socket || !(this.room || this.solo)) {
      this.probe = null;
      return;
    }
    const now = performance.now();
    if (this.probe) {
      if (this.lastHeard >= this.probe.at) this.probe = null;
      else if (now - this.probe.at > PROBE_MS) this.dropSilent(socket);
      return;
    }
    if (now - this.lastHeard > QUIET_MS) {
      this.probe = { seq: this.nextSeq(), at: now };
      this.probeSeqs.add(this.probe.seq);
      const question = this.room ? lobbyInfo(this.room.code, this.room.invite) : ping();
      this.sendRaw({ ...question, seq: this.probe.seq });
    }
  }

  /** Gives up on a socket that stopped answering, as if it had closed. */
  dropSilent(socket) {
    this.probe = null;
    this.socket = null;
    this.ready = false;
    this.dropUnrepeatable('The connection stopped answering before the server answered.');
    socket.close(1000);
    this.emit('status', 'offline');
    if (!this.stopped) this.scheduleReconnect();
  }

  get token() {
    return this.storage.getItem(TOKEN_KEY);
  }

  /** The display name this device's guest chose, sent with every `hello`. */
  get chosenName() {
    return this.storage.getItem(NAME_KEY) || null;
  }

  /**
   * Remembers a guest's chosen name and reconnects so the server takes it
   * (it answers with a token carrying the normalised name); the room, if
   * any, is entered again and shows the new name.
   */
  chooseName(name) {
    const trimmed = String(name ?? '').trim();
    if (trimmed) this.storage.setItem(NAME_KEY, trimmed);
    else this.storage.removeItem(NAME_KEY);
    this.reconnect();
  }

  /**
   * Keeps an account token from the hosting site as this page's identity,
   * in place of any guest token; it is used by the next `hello`.
   */
  setAccountToken(token) {
    this.storage.setItem(TOKEN_KEY, token);
  }

  /** Forgets the kept token (account or guest) and reconnects as a new guest. */
  signOut() {
    this.storage.removeItem(TOKEN_KEY);
    this.forgetRoom();
    this.enterSolo(null);
    this.hint = null;
    this.reconnect();
  }

  /** Drops the socket (if any) and opens a fresh one at once, sending a new `hello`. */
  reconnect() {
    const socket = this.socket;
    this.socket = null;
    this.ready = false;
    this.identity = null;
    this.dropUnrepeatable('The connection was restarted before the server answered.');
    clearTimeout(this.reconnectTimer);
    if (socket) socket.close(1000);
    if (!this.stopped) this.open();
  }

  /** The next `seq`, counted across connections and reloads (§4). */
  nextSeq() {
    let seq = Number(this.storage.getItem(SEQ_KEY) || '0') + 1;
    if (!Number.isSafeInteger(seq) || seq > MAX_SEQ) seq = 1;
    this.storage.setItem(SEQ_KEY, String(seq));
    return seq;
  }

  start() {
    this.stopped = false;
    this.open();
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  open() {
    this.ready = false;
    this.probe = null;
    this.probeSeqs.clear();
    this.lastHeard = performance.now();
    this.emit('status', 'connecting');
    let socket;
    try {
      socket = new WebSocket(this.socketUrl(), SUBPROTOCOLS);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    socket.addEventListener('open', () => {
      this.protocol = protocolOf(socket.protocol);
      if (this.protocol === 0) {
        socket.close(1000);
        return;
      }
      this.roomView = new V2RoomView();
      this.resyncing = null;
      this.sendRaw({ ...hello(this.protocol, this.token, this.chosenName), seq: this.nextSeq() });
    });
    socket.addEventListener('message', (event) => {
      if (this.socket !== socket) return; // a socket we have replaced
      this.lastHeard = performance.now();
      if (typeof event.data !== 'string') return;
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      this.handle(message);
    });
    socket.addEventListener('close', (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.ready = false;
      this.dropUnrepeatable('The connection dropped before the server answered.');
      if (event.code === 1002 && this.outdated) {
        this.emit('status', 'outdated');
        return;
      }
      this.emit('status', 'offline');
      if (this.stopped) return;
      // The room is on another instance by now: come back at once, naming
      // it, with a little jitter so that its members do not arrive in step.
      if (event.code === CLOSE_ROOM_MOVED) this.reconnectAfter(Math.random() * 250);
      else this.scheduleReconnect();
    });
  }

  /** Whether an unanswered request may go again, unchanged, on a new connection. */
  repeatable(entry) {
    // A re-entry is sent afresh by every connection; in a solo game nothing
    // is de-duplicated (§14), and its fresh `solo_state` shows what took effect.
    if (entry.reentry) return false;
    const { type } = entry.message;
    return ENTERING.has(type) || QUESTIONS.has(type) || (LOBBY_ACTIONS.has(type) && !this.solo);
  }

  /** Reports the unanswered requests that will not be sent again as lost. */
  dropUnrepeatable(why) {
    for (const [seq, entry] of this.pending) {
      if (!this.repeatable(entry)) {
        this.pending.delete(seq);
        entry.reject(new RequestError('connection_lost', why));
      }
    }
  }

  /**
   * Names the room or solo game in the address (`/ws?room=CODE`) so that a
   * proxy in front of several servers can send us to the one holding it (see
   * deploy/README.md); a single server ignores it.
   */
  socketUrl() {
    const code = this.room?.code ?? this.hint ?? this.solo ?? this.lastSolo;
    return code ? `${this.url}?room=${encodeURIComponent(code)}` : this.url;
  }

  /** Before joining `code` from outside any room: reconnect aimed at it. */
  retarget(code) {
    if (this.room || this.hint === code) return;
    this.hint = code;
    const socket = this.socket;
    if (!socket) return;
    this.socket = null;
    this.ready = false;
    this.dropUnrepeatable('The connection was restarted before the server answered.');
    socket.close(1000);
    this.open();
  }

  scheduleReconnect() {
    // With a game open, try at least every 4 s (6 s with the jitter), so a
    // restarted server's grace for the side to move (15 s) is not spent
    // waiting here; elsewhere back off up to 15 s.
    const cap = this.room || this.solo ? 4000 : 15000;
    const base = Math.min(cap, 500 * 2 ** this.attempt);
    this.attempt += 1;
    this.reconnectAfter(Math.max(base * (0.5 + Math.random()), this.minDelay));
  }

  reconnectAfter(delay) {
    this.minDelay = 0;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => this.open(), delay);
  }

  /**
   * After `room_unavailable` (the room is between server instances, §15):
   * drops this connection and opens one naming the room after a back-off,
   * showing "reconnecting" meanwhile. False once that has happened too often
   * in a row, so that the refusal stands.
   */
  retryRoomLater() {
    if (this.roomRetries >= MAX_ROOM_RETRIES) {
      this.roomRetries = 0;
      return false;
    }
    const delay = Math.min(8000, 500 * 2 ** this.roomRetries) * (0.5 + Math.random());
    this.roomRetries += 1;
    const socket = this.socket;
    this.socket = null;
    this.ready = false;
    this.dropUnrepeatable('The connection was restarted before the server answered.');
    if (socket) socket.close(1000);
    this.emit('status', 'offline');
    this.reconnectAfter(delay);
    return true;
  }

  sendRaw(message) {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) {
      this.socket.send(JSON.stringify(message));
    }
  }

  async whenReady() {
    if (this.ready) return;
    await new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * Sends a message; resolves on its `ack`, rejects with a RequestError.
   * A request waits for the connection, except a game action while the page
   * is in a room or a solo game and not connected: that is refused at once
   * (`offline`), never sent later.
   */
  async request(message) {
    if (!this.ready && (this.room || this.solo) && HELD_OFFLINE.has(message.type)) {
      throw new RequestError('offline', 'not connected: the action was not sent');
    }
    await this.whenReady();
    return this.send(message);
  }

  /** Sends a message now, ready or not; `reentry` marks this connection's own re-entry. */
  send(message, reentry = false) {
    const seq = this.nextSeq();
    const full = { ...message, seq };
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { message: full, resolve, reject, reentry });
      this.sendRaw(full);
    });
  }

  /** Remembers the room this connection is in, to re-enter it later. */
  enterRoom(room) {
    if (this.room?.code !== room.code) {
      this.version = 0;
      // The snapshot of the room being entered may already be held (the page
      // learns of its room from that snapshot): keep it.
      if (this.roomView.room?.code !== room.code) this.forgetRoomView();
    }
    this.room = room;
  }

  forgetRoom() {
    this.room = null;
    this.forgetRoomView();
  }

  forgetRoomView() {
    this.version = 0;
    this.roomView = new V2RoomView();
    this.resyncing = null;
  }

  /**
   * Protocol 2: applies a `snapshot`, `moved` or `changed` to the room and
   * shows the result; on a missed version asks `resync` from the version
   * held (0: a whole snapshot), once at a time (§21.6).
   */
  applyRoomEvent(message) {
    if (message.type === 'snapshot' && this.room && message.code !== this.room.code) return;
    const result = this.roomView.update(message);
    if ('gap' in result) {
      this.askResync(gapSince(result.gap));
      return;
    }
    if (result.ok !== 'replaced' && result.ok !== 'applied') return;
    this.emit('state', roomState(this.roomView.room));
  }

  /** Sends `resync { since }` unless one is out; the next gap after its answer asks again. */
  askResync(since) {
    if (this.resyncing !== null) return;
    const asked = { since };
    this.resyncing = asked;
    const answered = () => {
      if (this.resyncing === asked) this.resyncing = null;
    };
    this.send(resync(since)).then(answered, answered);
  }

  /** Remembers the solo game this page shows (null: none). */
  enterSolo(id, version = 0) {
    this.solo = id;
    this.soloVersion = version;
    this.lastSolo = id;
    if (id) this.storage.setItem(SOLO_KEY, id);
    else this.storage.removeItem(SOLO_KEY);
  }

  handle(message) {
    switch (message.type) {
      case 'welcome':
        this.storage.setItem(TOKEN_KEY, message.token);
        this.identity = message.identity;
        // Whether this server takes account tokens at all (sign-in).
        this.accounts = message.accounts === true;
        this.attempt = 0;
        this.emit('welcome', message.identity);
        this.afterWelcome();
        break;
      case 'ack': {
        if (this.probeSeqs.delete(message.seq)) break; // a solo game's liveness `ping`
        const entry = this.pending.get(message.seq);
        if (entry) {
          this.pending.delete(message.seq);
          if (ENTERING.has(entry.message.type)) this.roomRetries = 0;
          entry.resolve(message);
        }
        break;
      }
      case 'error':
        this.handleError(message);
        break;
      case 'snapshot':
      case 'moved':
      case 'changed':
        this.applyRoomEvent(message);
        break;
      case 'state':
        // Protocol 1, when the server chose it.
        if (this.room && message.code !== this.room.code) break;
        if (message.version < this.version) break;
        this.version = message.version;
        this.emit('state', message);
        break;
      case 'solo_state':
        if (this.solo === message.id && message.version < this.soloVersion) break;
        this.emit('solo-state', message);
        break;
      case 'left':
        this.roomView.update(message);
        this.emit('left', message.code);
        break;
      case 'lobby_info':
      case 'my_games': {
        if (this.probeSeqs.delete(message.seq)) break;
        // The answer to a question: it resolves the request as an `ack` would.
        const entry = this.pending.get(message.seq);
        if (entry && entry.message.type === message.type) {
          this.pending.delete(message.seq);
          entry.resolve(message);
        }
        break;
      }
      case 'shutdown':
        this.minDelay = message.reconnect_after_ms * (1 + Math.random());
        this.emit('shutdown', message);
        break;
      default:
        // Later servers may send message types this page does not know (§2).
        break;
    }
  }

  handleError(message) {
    // The answer to a liveness question: hearing it was the point.
    if (this.probeSeqs.delete(message.seq)) return;
    const entry = message.seq === undefined ? undefined : this.pending.get(message.seq);
    if (entry) {
      // Kept unanswered, it goes again on the connection that replaces this one.
      if (message.code === 'room_unavailable' && this.repeatable(entry) && this.retryRoomLater()) return;
      this.pending.delete(message.seq);
      entry.reject(new RequestError(message.code, message.message));
      return;
    }
    if (!this.ready) {
      if (message.code === 'invalid_token') {
        if (isAccountToken(this.token)) this.emit('account-rejected', message);
        this.storage.removeItem(TOKEN_KEY);
        this.sendRaw({ ...hello(this.protocol, null, this.chosenName), seq: this.nextSeq() });
        return;
      }
      if (message.code === 'unsupported_version') {
        this.outdated = true;
        this.stopped = true;
      }
    }
    this.emit('notice', message);
  }

  /**
   * Re-enters the remembered room or solo game, then re-sends the unanswered
   * requests (§10). A player whose `leave` is unanswered re-enters by
   * `watch`, which gives back a seat still held but never takes a free one.
   */
  async afterWelcome() {
    const socket = this.socket;
    const unanswered = [...this.pending.values()];
    if (this.room) {
      const { code, invite, role } = this.room;
      const leaving = unanswered.some((entry) => entry.message.type === 'leave');
      const message = role === 'spectator' || leaving ? watch(code, invite) : joinLobby(code);
      try {
        await this.send(message, true);
      } catch (error) {
        if (!this.keepRoomAfter(error)) {
          // Forgotten first: whoever hears of it sees a page in no room.
          this.forgetRoom();
          // Its unanswered actions end here, quietly: sent now they would
          // only be refused `not_in_lobby`, a notice over the page's news.
          this.dropRoomActions();
          // The server does not know the room any more (it was restarted
          // without keeping it): that is news of its own, not an error.
          if (error.code === 'unknown_lobby') this.emit('room-gone', { code, role });
          else this.emit('notice', { code: error.code, message: error.message });
        }
      }
    } else if (this.solo) {
      // A solo game is detached when its connection drops: attach again.
      try {
        await this.send(resumeSolo(), true);
      } catch (error) {
        if (!this.keepRoomAfter(error)) {
          const lost = this.solo;
          this.solo = null;
          this.emit('solo-lost', { id: lost, code: error.code, message: error.message });
        }
      }
    }
    if (this.socket !== socket) return; // gone meanwhile: the next connection carries on
    const still = new Set(this.pending.values());
    for (const entry of unanswered) if (still.has(entry)) this.sendRaw(entry.message);
    this.ready = true;
    this.emit('status', 'online');
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** The room is lost: its unanswered actions are rejected with `room_gone`, which app.js does not show. */
  dropRoomActions() {
    for (const [seq, entry] of this.pending) {
      if (entry.reentry || !LOBBY_ACTIONS.has(entry.message.type)) continue;
      this.pending.delete(seq);
      entry.reject(new RequestError('room_gone', 'the room is gone'));
    }
  }

  /**
   * Whether a refused re-entry leaves the room to the next connection: this
   * one dropped first, or the room is between instances and will be asked
   * again on a new connection.
   */
  keepRoomAfter(error) {
    return error.code === 'connection_lost' || (error.code === 'room_unavailable' && this.retryRoomLater());
  }
}
