/**
 * A session with a Jumpgate server that behaves like the Rust crate's
 * `ReconnectingClient` (PROTOCOL.md section 10): it greets, numbers requests
 * and settles each one's promise with its answer, keeps the latest room
 * view, and after a dropped connection, a server restart or a room moving it
 * reconnects with back-off and jitter, greets again with its token, re-enters
 * its room and re-sends the unanswered requests with their original `seq`.
 *
 * Over 800 lines: a third of them are the one-line helpers for every request
 * type and their docs; the rest is the reconnect state machine, which reads
 * best in one place.
 * @module
 */
import { type Encoding, type ProtocolVersion } from "./codec.js";
import { DecodeError } from "./codec.js";
import { Connection, ConnectionClosed, StepTimeout, SubprotocolError, type WebSocketConstructor } from "./connection.js";
import { JumpgateError, RequestNotResentError, RoomLostError, SessionEndedError } from "./errors.js";
import { HttpPages } from "./pages.js";

/** The requests that act in the room the session is in, rather than enter one or ask the server. */
const ACTS_IN_ROOM: ReadonlySet<string> = new Set([
  "leave",
  "move",
  "offer_draw",
  "accept_draw",
  "decline_draw",
  "resign",
  "next_round",
  "rematch",
  "end_match",
  "resync",
  "undo",
  "claim_forfeit",
]);
import type {
  ClientCreateLobby,
  ClientLobbyInfo,
  ClientMessage,
  ClientMyGames,
  ClientStartSolo,
  Identity,
  ServerAck,
  ServerLobbyInfo,
  ServerMessage,
  ServerMyGames,
  ServerWelcome,
  SoloState,
} from "./generated/messages.js";
import {
  backoffDelay,
  CLOSE_ROOM_MOVED,
  closeMeansReconnect,
  DEFAULT_POLICY,
  isRetryableCode,
  roomUrl,
  type ReconnectPolicy,
} from "./policy.js";
import { isFinished, isMyTurn, playMark, seatOf, SnapshotStateHolder, type RoomView, type StateHolder } from "./state.js";
import { V2RoomView } from "./v2.js";

/** The protocol version a session speaks unless told otherwise (PROTOCOL.md section 21). */
export const PROTOCOL_VERSION: ProtocolVersion = 2;

/** What a session needs to connect. */
export interface SessionOptions {
  /** The server's WebSocket address, e.g. `ws://127.0.0.1:8080/ws`. */
  url: string;
  /** `json` (text frames) or `msgpack` (binary frames); default `json`. */
  encoding?: Encoding;
  /**
   * 2 (the default: a lobby arrives as `snapshot`, then `moved`/`changed`
   * events) or 1 (a whole `state` after every change). It picks the
   * subprotocol offered, `hello.protocol` and the default state holder.
   */
  protocol?: ProtocolVersion;
  /** A token from an earlier session's {@link Session.token}; absent for a new guest. */
  token?: string;
  /** The client's name and version, for the server's logs. */
  client?: string;
  /** A guest's chosen display name. */
  name?: string;
  /** The WebSocket constructor; default the platform's `globalThis.WebSocket`. */
  WebSocket?: WebSocketConstructor;
  /** How to reconnect; fields left out take {@link DEFAULT_POLICY}'s. */
  policy?: Partial<ReconnectPolicy>;
  /** Keeps the room view; default a {@link V2RoomView} (protocol 2) or a {@link SnapshotStateHolder} (protocol 1). */
  stateHolder?: StateHolder;
}

/** The room a session is in, as far as coming back to it goes. */
export type Room =
  | { kind: "lobby"; code: string; invite?: string; seated: boolean }
  | { kind: "solo"; id: string };

/** What became of the room when the session reconnected. */
export type Reentry =
  | { kind: "no_room" }
  | { kind: "rejoined"; room: Room }
  /** The server would not let the session back in (say, `unknown_lobby` after losing its lobbies). */
  | { kind: "lost"; room: Room; refusal: JumpgateError };

/** Why a connection was replaced. */
export type Disconnect =
  | { kind: "closed"; code: number; reason: string }
  | { kind: "room_unavailable" }
  | { kind: "failed"; why: string };

/** A reconnection that worked. */
export interface Reconnection {
  cause: Disconnect;
  /** Connections tried, 1 when the first one worked. */
  attempts: number;
  room: Reentry;
  /** Requests not sent again (solo moves and undos); their promises rejected with {@link RequestNotResentError}. */
  notResent: ClientMessage[];
}

/** The events a session emits, by name. */
export interface SessionEvents {
  /** Every message from the server except retryable refusals the session handles itself. */
  message: ServerMessage;
  /** The room view changed; `undefined` once the session is in no room. */
  view: RoomView | undefined;
  /** A message the session wrote (a request, a re-sent one, `hello`, a re-entry). */
  sent: ClientMessage;
  /** The connection dropped; a new one will be tried after `delayMs`. */
  disconnected: { cause: Disconnect; delayMs: number };
  /** The connection was replaced; messages from the new one follow. */
  reconnected: Reconnection;
  /** An `error` that answers none of this session's requests (it has no `seq`, say). */
  error: JumpgateError;
  /** A frame from the server that could not be decoded; the connection stays up. */
  decodeError: DecodeError;
  /** The session stopped for good. */
  ended: SessionEndedError;
}

type Listener<T> = (value: T) => void;

/** A client message without `seq`, which the session fills in. */
export type Request = ClientMessage extends infer M ? (M extends { type: "hello" } ? never : M extends unknown ? Omit<M, "seq"> : never) : never;

/** What a request's promise resolves with: the message that answers it. */
export type Answer = ServerAck | ServerLobbyInfo | ServerMyGames;

interface Pending {
  message: ClientMessage;
  /** Whether it may be sent again without its first copy's answer. */
  repeatable: boolean;
  refusals: number;
  retryTimer: ReturnType<typeof setTimeout> | undefined;
  resolve(answer: Answer): void;
  reject(err: Error): void;
}

interface Outage {
  cause: Disconnect;
  since: number;
  attempts: number;
  lastFailure: string;
}

/** How one connection attempt failed. */
class AttemptFailed extends Error {
  constructor(
    readonly final: SessionEndedError | undefined,
    why: string,
  ) {
    super(why);
  }
}

export class Session {
  readonly #url: string;
  readonly #encoding: Encoding;
  readonly #protocol: ProtocolVersion;
  readonly #client: string;
  readonly #name: string | undefined;
  readonly #WebSocket: WebSocketConstructor;
  readonly #policy: ReconnectPolicy;
  readonly #holder: StateHolder;
  #identity: Identity;
  #token: string;
  #accounts: boolean;
  #lastSeq = 0;
  #room: Room | undefined;
  readonly #pending = new Map<number, Pending>();
  #connection: Connection | undefined;
  #outage: Outage | undefined;
  /** The wait the latest `shutdown` asked for, jitter added. */
  #notice: number | undefined;
  /** Send times of this connection's latest messages, for the rate. */
  #sentAt: number[] = [];
  /** Requests waiting for their slot on the current connection, by `seq`. */
  #queue: number[] = [];
  #queueTimer: ReturnType<typeof setTimeout> | undefined;
  #reconnections = 0;
  #ended: SessionEndedError | undefined;
  readonly #listeners = new Map<keyof SessionEvents, Set<Listener<never>>>();

  private constructor(options: SessionOptions, WebSocketClass: WebSocketConstructor, welcome: ServerWelcome, lastSeq: number) {
    this.#url = options.url;
    this.#encoding = options.encoding ?? "json";
    this.#protocol = options.protocol ?? PROTOCOL_VERSION;
    this.#client = options.client ?? "jumpgate-ts/0.1";
    this.#name = options.name;
    this.#WebSocket = WebSocketClass;
    this.#policy = { ...DEFAULT_POLICY, ...options.policy };
    this.#holder = options.stateHolder ?? (this.#protocol === 2 ? new V2RoomView() : new SnapshotStateHolder());
    this.#identity = welcome.identity;
    this.#token = welcome.token;
    this.#accounts = welcome.accounts ?? false;
    this.#lastSeq = lastSeq;
  }

  /**
   * Opens a connection, sends `hello` and waits for `welcome`. This first
   * connection is tried once: it rejects with {@link SessionEndedError} when
   * it cannot be opened or the server refuses the `hello`.
   */
  static async connect(options: SessionOptions): Promise<Session> {
    const WebSocketClass = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (WebSocketClass === undefined) {
      throw new SessionEndedError("no WebSocket: this platform has none; pass one (say, the ws package's) as options.WebSocket");
    }
    if (!/^wss?:\/\//i.test(options.url)) {
      // Browsers and the ws package would take http:// as ws://; an invite
      // link or a page's address passed here is a mistake worth saying.
      throw new SessionEndedError(
        `${options.url} is not a WebSocket URL: give the server's ws:// address, such as ws://127.0.0.1:8080/ws (an invite link, http://…/r/CODE, names a lobby to join)`,
      );
    }
    const policy = { ...DEFAULT_POLICY, ...options.policy };
    const encoding = options.encoding ?? "json";
    const protocol = options.protocol ?? PROTOCOL_VERSION;
    let connection: Connection;
    try {
      connection = await Connection.open(options.url, protocol, encoding, WebSocketClass, policy.stepTimeoutMs);
    } catch (err) {
      throw new SessionEndedError(`could not connect: ${(err as Error).message}`, undefined, (err as ConnectionClosed).code);
    }
    const hello = helloMessage(1, protocol, options.token, options.client ?? "jumpgate-ts/0.1", options.name);
    let welcome: ServerWelcome;
    try {
      welcome = await greet(connection, hello, policy.stepTimeoutMs, () => {});
    } catch (err) {
      connection.close();
      throw err instanceof AttemptFailed
        ? (err.final ?? new SessionEndedError(`could not connect: ${err.message}`))
        : err;
    }
    const session = new Session(options, WebSocketClass, welcome, hello.seq);
    session.#emit("sent", hello);
    session.#adopt(connection);
    return session;
  }

  /** Who the server knows this session as. */
  get identity(): Identity {
    return this.#identity;
  }

  /** The latest token from `welcome`: keep it to come back as this identity later. */
  get token(): string {
    return this.#token;
  }

  /** Whether the server accepts account tokens (`welcome.accounts`). */
  get accounts(): boolean {
    return this.#accounts;
  }

  /** The room the session is in, as far as it knows. */
  get room(): Room | undefined {
    return this.#room;
  }

  /** The latest lobby or solo game state. */
  get view(): RoomView | undefined {
    return this.#holder.view;
  }

  /** The seat (0 or 1) this identity holds in the lobby, if any. */
  get seat(): number | undefined {
    return seatOf(this.view, this.#identity.id);
  }

  /**
   * Whether it is this identity's turn: in the lobby's round being played,
   * or in the solo game (against the computer, when it is not thinking).
   */
  get myTurn(): boolean {
    return isMyTurn(this.view, this.#identity.id);
  }

  /**
   * Whether nothing more will be played where the session is: in no room,
   * the lobby's series over, or the solo game decided. A bot waits for
   * `myTurn || finished`.
   */
  get finished(): boolean {
    return isFinished(this.view);
  }

  /** The protocol version the session speaks. */
  get protocol(): ProtocolVersion {
    return this.#protocol;
  }

  /** The last `seq` used, on any connection. */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** How many times the connection has been replaced. */
  get reconnections(): number {
    return this.#reconnections;
  }

  /**
   * The server's lobby pages over HTTP (summary, finished games' PDN), at the
   * address this session connects to: `ws://host:port/ws` reads them from
   * `http://host:port`.
   */
  get pages(): HttpPages {
    return new HttpPages(this.#url);
  }

  /** Whether a connection is up right now (not in an outage, not ended). */
  get connected(): boolean {
    return this.#connection !== undefined;
  }

  /** Listens for `event`; returns a function that stops listening. */
  on<E extends keyof SessionEvents>(event: E, listener: Listener<SessionEvents[E]>): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener as Listener<never>);
    return () => set.delete(listener as Listener<never>);
  }

  /**
   * Resolves with the room view once `predicate` holds for it: at once if it
   * already does, else at the first `view` event after which it does. Rejects
   * with {@link SessionEndedError} if the session ends first, and with an
   * `Error` after `timeoutMs` when one is given.
   *
   * A request's promise resolves on its `ack`, which the server sends before
   * the `snapshot` or event the request caused: after `await move(path)` or
   * `await request(...)` the view may not show it yet. Wait with this (or
   * use `play`, `createLobby`, `joinLobby` and `watch`, which wait for their
   * effect themselves).
   */
  waitForView(predicate: (view: RoomView | undefined) => boolean, timeoutMs?: number): Promise<RoomView | undefined> {
    if (predicate(this.view)) {
      return Promise.resolve(this.view);
    }
    if (this.#ended !== undefined) {
      return Promise.reject(this.#ended);
    }
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stop = (): void => {
        offView();
        offEnded();
        clearTimeout(timer);
      };
      const offView = this.on("view", (view) => {
        if (predicate(view)) {
          stop();
          resolve(view);
        }
      });
      const offEnded = this.on("ended", (err) => {
        stop();
        reject(err);
      });
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          stop();
          reject(new Error(`waitForView: no matching view within ${timeoutMs} ms`));
        }, timeoutMs);
      }
    });
  }

  /**
   * Sends `request` with the next `seq` and resolves with its answer (`ack`,
   * or `lobby_info` / `my_games` for those questions). Rejects with
   * {@link JumpgateError} when the server refuses it, after the session has
   * retried refusals that may succeed later (`storage_unavailable`,
   * `room_unavailable`, `rate_limited`) up to the policy's attempts. During an
   * outage the request waits for the next connection.
   */
  request(request: Omit<ClientLobbyInfo, "seq">): Promise<ServerLobbyInfo>;
  request(request: Omit<ClientMyGames, "seq">): Promise<ServerMyGames>;
  request(request: Request): Promise<ServerAck>;
  request(request: Request): Promise<Answer> {
    if (this.#ended !== undefined) {
      return Promise.reject(this.#ended);
    }
    const seq = this.#nextSeq();
    const message = { ...request, seq } as ClientMessage;
    const repeatable = !(this.#room?.kind === "solo" && (message.type === "move" || message.type === "undo"));
    // Where the request was made, added to the stack of the error that
    // refuses it (which is made later, inside the session).
    const origin = new Error();
    return new Promise<Answer>((resolve, reject) => {
      const refuse = (err: unknown): void => {
        if (err instanceof Error && origin.stack !== undefined) {
          err.stack = `${err.stack ?? String(err)}\n    --- the request was made:${origin.stack.slice(origin.stack.indexOf("\n"))}`;
        }
        reject(err);
      };
      this.#pending.set(seq, { message, repeatable, refusals: 0, retryTimer: undefined, resolve, reject: refuse });
      this.#enqueue(seq);
    });
  }

  /**
   * Creates a lobby, seated as its host, and resolves with its view once the
   * session has it (the room's `code` and `invite_link` are in it).
   */
  async createLobby(options: Omit<ClientCreateLobby, "type" | "seq"> = {}): Promise<RoomView> {
    await this.request({ type: "create_lobby", ...options });
    return this.#lobbyView(undefined);
  }

  /**
   * Takes the free seat of the lobby `code` (or the seat this identity
   * already holds there) and resolves with the room's view once the session
   * has it.
   */
  async joinLobby(code: string, invite?: string): Promise<RoomView> {
    await this.request({ type: "join_lobby", code, ...(invite === undefined ? {} : { invite }) });
    return this.#lobbyView(code);
  }

  /** Watches the lobby `code` as a spectator; resolves with the room's view once the session has it. */
  async watch(code: string, invite?: string): Promise<RoomView> {
    await this.request({ type: "watch", code, ...(invite === undefined ? {} : { invite }) });
    return this.#lobbyView(code);
  }

  /** The lobby's view, once the session has one (of the lobby `code`, when given). */
  async #lobbyView(code: string | undefined): Promise<RoomView> {
    const wanted = code?.trim().toUpperCase();
    const view = await this.waitForView(
      (view) => view !== undefined && view.kind !== "solo" && (wanted === undefined || view.state.code === wanted),
    );
    return view as RoomView;
  }

  leave(): Promise<ServerAck> {
    return this.request({ type: "leave" });
  }

  /**
   * Plays a move by notation (`"11-15"`) or by path (`["c3", "d4"]`: one of
   * the game's `legal` paths in protocol 2, a `legal_moves` entry's `path` in
   * protocol 1).
   */
  move(move: string | string[]): Promise<ServerAck> {
    return this.request(typeof move === "string" ? { type: "move", notation: move } : { type: "move", path: move });
  }

  /**
   * Plays a move, as {@link move} does, and resolves with the first view
   * that shows it. The `ack` comes before the event that carries the move,
   * and after a reconnection the room's snapshot can arrive before the
   * re-sent move is applied; `play` waits past both, until the view has the
   * move (or has moved on: the round ended, the room is gone). Choose the
   * next move from what it resolves with.
   *
   * ```ts
   * while (true) {
   *   await session.waitForView(() => session.myTurn || session.finished);
   *   if (session.finished) break;
   *   const view = session.view;
   *   if (view?.kind === "lobby_v2" && view.state.game) await session.play(view.state.game.legal[0]);
   * }
   * ```
   */
  async play(move: string | string[]): Promise<RoomView | undefined> {
    const before = playMark(this.view);
    await this.move(move);
    return this.waitForView((view) => playMark(view) !== before);
  }

  offerDraw(): Promise<ServerAck> {
    return this.request({ type: "offer_draw" });
  }

  acceptDraw(): Promise<ServerAck> {
    return this.request({ type: "accept_draw" });
  }

  declineDraw(): Promise<ServerAck> {
    return this.request({ type: "decline_draw" });
  }

  resign(): Promise<ServerAck> {
    return this.request({ type: "resign" });
  }

  nextRound(): Promise<ServerAck> {
    return this.request({ type: "next_round" });
  }

  rematch(): Promise<ServerAck> {
    return this.request({ type: "rematch" });
  }

  endMatch(): Promise<ServerAck> {
    return this.request({ type: "end_match" });
  }

  claimForfeit(): Promise<ServerAck> {
    return this.request({ type: "claim_forfeit" });
  }

  resync(): Promise<ServerAck> {
    return this.request({ type: "resync", since: this.#holder.version });
  }

  ping(): Promise<ServerAck> {
    return this.request({ type: "ping" });
  }

  /**
   * Starts a solo game (against the computer by default, or on one device
   * with `mode: "same_device"`) and resolves with its first view, as soon as
   * the session has the new game's `solo_state`.
   */
  async startSolo(options: Omit<ClientStartSolo, "type" | "seq"> = {}): Promise<RoomView> {
    const now = this.view;
    const before = now?.kind === "solo" ? `${now.state.id}/${now.state.version}` : undefined;
    await this.request({ type: "start_solo", ...options });
    return this.#soloView((solo) => `${solo.id}/${solo.version}` !== before);
  }

  undo(): Promise<ServerAck> {
    return this.request({ type: "undo" });
  }

  /** Comes back to this identity's unfinished solo game and resolves with its view. */
  async resumeSolo(): Promise<RoomView> {
    await this.request({ type: "resume_solo" });
    return this.#soloView(() => true);
  }

  /** The solo game's view, once the session has one that `accept`s. */
  async #soloView(accept: (solo: SoloState) => boolean): Promise<RoomView> {
    const view = await this.waitForView((view) => view?.kind === "solo" && accept(view.state));
    return view as RoomView;
  }

  lobbyInfo(code: string, invite?: string): Promise<ServerLobbyInfo> {
    return this.request({ type: "lobby_info", code, ...(invite === undefined ? {} : { invite }) });
  }

  myGames(): Promise<ServerMyGames> {
    return this.request({ type: "my_games" });
  }

  /** Closes the connection with 1000 and stops; unanswered requests reject with {@link SessionEndedError}. */
  close(): void {
    this.#end(new SessionEndedError("the session was closed"));
  }

  #nextSeq(): number {
    this.#lastSeq = (this.#lastSeq + 1) >>> 0;
    return this.#lastSeq;
  }

  #emit<E extends keyof SessionEvents>(event: E, value: SessionEvents[E]): void {
    for (const listener of this.#listeners.get(event) ?? []) {
      try {
        (listener as Listener<SessionEvents[E]>)(value);
      } catch (err) {
        // A listener's failure must not break the session's bookkeeping.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  /** Makes `connection` the live one and starts reading from it. */
  #adopt(connection: Connection): void {
    this.#connection = connection;
    connection.deliverTo({
      message: (message) => this.#observe(message),
      decodeError: (error) => this.#emit("decodeError", error),
      closed: (closed) => {
        if (this.#connection === connection) {
          this.#loseConnection({ kind: "closed", code: closed.code, reason: closed.reason }, closed.code);
        }
      },
    });
  }

  /** When the next message may go on this connection; it counts as sent then. */
  #nextSlot(now: number): number {
    if (this.#sentAt.length < this.#policy.messagesPerSecond) {
      this.#sentAt.push(now);
      return now;
    }
    const oldest = this.#sentAt.shift() ?? now;
    const slot = Math.max(now, oldest + 1000);
    this.#sentAt.push(slot);
    return slot;
  }

  #enqueue(seq: number): void {
    if (this.#connection === undefined) {
      // Sent with every other unanswered request on the next connection.
      return;
    }
    this.#queue.push(seq);
    this.#pump();
  }

  /** Sends queued requests as the rate allows, in order. */
  #pump(): void {
    if (this.#queueTimer !== undefined) {
      return;
    }
    while (this.#queue.length > 0 && this.#connection !== undefined) {
      const now = Date.now();
      const windowFull = this.#sentAt.length >= this.#policy.messagesPerSecond;
      const waitMs = windowFull ? (this.#sentAt[0] ?? now) + 1000 - now : 0;
      if (waitMs > 0) {
        this.#queueTimer = setTimeout(() => {
          this.#queueTimer = undefined;
          this.#pump();
        }, waitMs);
        return;
      }
      const seq = this.#queue.shift() as number;
      const pending = this.#pending.get(seq);
      if (pending === undefined) {
        continue;
      }
      this.#nextSlot(now);
      this.#transmit(this.#connection, pending.message);
    }
  }

  #transmit(connection: Connection, message: ClientMessage): void {
    try {
      connection.send(message);
    } catch {
      // The socket is closing; its close event starts the outage, and the
      // message goes again on the next connection like every unanswered one.
      return;
    }
    this.#emit("sent", message);
  }

  /** Keeps the books on a message from the server, then passes it on. */
  #observe(message: ServerMessage): void {
    switch (message.type) {
      case "ack": {
        const pending = this.#settle(message.seq);
        const request = pending?.message;
        if (request?.type === "leave") {
          // A solo game's `leave` is answered by `ack` alone, without `left`.
          this.#room = undefined;
        } else if (request?.type === "join_lobby" || request?.type === "watch") {
          // In the room from now on, even if the connection drops before the
          // `state` that follows (which then corrects `seated` for a `watch`
          // that gave a seat back).
          this.#room = {
            kind: "lobby",
            code: request.code.trim().toUpperCase(),
            seated: request.type === "join_lobby",
            ...(request.invite == null ? {} : { invite: request.invite }),
          };
        }
        pending?.resolve(message);
        break;
      }
      case "error": {
        const seq = message.seq ?? undefined;
        const pending = seq === undefined ? undefined : this.#pending.get(seq);
        if (pending === undefined) {
          this.#emit("error", new JumpgateError(message.code, message.message, seq));
          break;
        }
        if (isRetryableCode(message.code) && pending.refusals < this.#policy.maxAttempts) {
          this.#retryLater(pending, message.code === "room_unavailable");
          return;
        }
        this.#settle(pending.message.seq);
        pending.reject(new JumpgateError(message.code, message.message, seq, pending.message));
        break;
      }
      case "lobby_info":
      case "my_games":
        this.#settle(message.seq)?.resolve(message);
        break;
      case "state":
      case "snapshot": {
        const seated = message.players.some((player) => player?.id === this.#identity.id);
        this.#room = {
          kind: "lobby",
          code: message.code,
          seated,
          ...(message.invite == null ? {} : { invite: message.invite }),
        };
        break;
      }
      case "solo_state":
        this.#room = { kind: "solo", id: message.id };
        break;
      case "left":
        this.#room = undefined;
        break;
      case "shutdown":
        // At least the asked-for wait, plus up to as much again, so that a
        // restart's clients do not all come back at once.
        this.#notice = message.reconnect_after_ms * (1 + Math.random());
        break;
      case "welcome":
        break;
    }
    const applied = this.#holder.apply(message);
    if (applied === "changed" || applied === "dropped") {
      this.#emit("view", this.#holder.view);
    }
    if (applied === "gap" || applied === "dropped") {
      // `since` is the version the holder keeps (0 once it dropped the room).
      // Events that arrive before the answer would ask the same: one will do.
      const since = this.#holder.version;
      const asked = [...this.#pending.values()].some(
        (pending) => pending.message.type === "resync" && pending.message.since === since,
      );
      if (!asked) {
        this.resync().catch(() => {});
      }
    }
    this.#emit("message", message);
  }

  /** Forgets request `seq`, answered at last; returns it if it was ours. */
  #settle(seq: number): Pending | undefined {
    const pending = this.#pending.get(seq);
    if (pending !== undefined) {
      clearTimeout(pending.retryTimer);
      this.#pending.delete(seq);
    }
    return pending;
  }

  /** Sends `pending` again after a back-off, on a new connection naming the room if `elsewhere`. */
  #retryLater(pending: Pending, elsewhere: boolean): void {
    pending.refusals += 1;
    const wait = backoffDelay(this.#policy.backoff, pending.refusals - 1);
    if (elsewhere) {
      // The room is between instances: come back on a connection that the
      // load balancer routes by the room's name.
      this.#connection?.close(1000);
      this.#beginOutage({ kind: "room_unavailable" }, wait);
      return;
    }
    clearTimeout(pending.retryTimer);
    pending.retryTimer = setTimeout(() => {
      pending.retryTimer = undefined;
      if (this.#pending.get(pending.message.seq) === pending) {
        this.#enqueue(pending.message.seq);
      }
    }, wait);
  }

  /** Starts an outage after the connection ended with `code`, or ends the session. */
  #loseConnection(cause: Disconnect, code: number): void {
    if (!closeMeansReconnect(code)) {
      this.#end(new SessionEndedError(`the server will not take this client back: closed with ${code}`, undefined, code));
      return;
    }
    let wait: number;
    if (this.#notice !== undefined) {
      wait = this.#notice;
      this.#notice = undefined;
    } else if (code === CLOSE_ROOM_MOVED) {
      // The room has been handed over already: come back at once.
      wait = 0;
    } else {
      wait = backoffDelay(this.#policy.backoff, 0);
    }
    this.#beginOutage(cause, wait);
  }

  #beginOutage(cause: Disconnect, waitMs: number): void {
    this.#connection = undefined;
    this.#queue = [];
    clearTimeout(this.#queueTimer);
    this.#queueTimer = undefined;
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.retryTimer);
      pending.retryTimer = undefined;
    }
    const outage: Outage = { cause, since: Date.now(), attempts: 0, lastFailure: describe(cause) };
    this.#outage = outage;
    this.#emit("disconnected", { cause, delayMs: waitMs });
    void this.#reconnect(outage, waitMs);
  }

  /** Tries new connections, with back-off, until one is back in the room or the policy gives up. */
  async #reconnect(outage: Outage, firstWaitMs: number): Promise<void> {
    let waitMs = firstWaitMs;
    for (;;) {
      if (outage.attempts >= this.#policy.maxAttempts || Date.now() + waitMs > outage.since + this.#policy.giveUpAfterMs) {
        this.#end(new SessionEndedError(`gave up reconnecting after ${outage.attempts} attempts; the last failure: ${outage.lastFailure}`));
        return;
      }
      await sleep(waitMs);
      if (this.#outage !== outage) {
        return;
      }
      outage.attempts += 1;
      try {
        await this.#attempt(outage);
        return;
      } catch (err) {
        if (this.#outage !== outage) {
          return;
        }
        const failure = err instanceof AttemptFailed ? err : new AttemptFailed(undefined, String(err));
        if (failure.final !== undefined) {
          this.#end(failure.final);
          return;
        }
        outage.lastFailure = failure.message;
        waitMs = backoffDelay(this.#policy.backoff, outage.attempts);
      }
    }
  }

  /** One reconnection: a new socket, `hello`, re-entering the room, re-sending. */
  async #attempt(outage: Outage): Promise<void> {
    const step = this.#policy.stepTimeoutMs;
    const url = roomUrl(this.#url, this.#route());
    let connection: Connection;
    try {
      connection = await Connection.open(url, this.#protocol, this.#encoding, this.#WebSocket, step);
    } catch (err) {
      throw classify(err);
    }
    const abandon = (err: unknown): never => {
      connection.close();
      throw err instanceof AttemptFailed ? err : classify(err);
    };
    if (this.#outage !== outage) {
      connection.close();
      return;
    }
    this.#sentAt = [];
    this.#nextSlot(Date.now());
    const early: ServerMessage[] = [];
    const hello = helloMessage(this.#nextSeq(), this.#protocol, this.#token, this.#client, this.#name);
    this.#emit("sent", hello);
    const welcome = await greet(connection, hello, step, (m) => early.push(m)).catch(abandon);
    if (welcome.identity.id !== this.#identity.id) {
      abandon(
        new AttemptFailed(
          new SessionEndedError(`reconnected as ${welcome.identity.id} instead of ${this.#identity.id}`),
          "identity changed",
        ),
      );
    }
    this.#token = welcome.token;
    this.#accounts = welcome.accounts ?? false;

    let reentry: Reentry = { kind: "no_room" };
    const room = this.#room;
    if (room !== undefined) {
      const enter = reentryMessage(room, this.#nextSeq(), this.#leaving());
      await sleep(Math.max(this.#nextSlot(Date.now()) - Date.now(), 0));
      try {
        connection.send(enter);
      } catch (err) {
        abandon(err);
      }
      this.#emit("sent", enter);
      const answer = await connection.answer(enter.seq, step, `re-entering ${routeOf(room)}`, (m) => early.push(m)).catch(abandon);
      if (answer.type === "error") {
        const refusal = new JumpgateError(answer.code, answer.message, answer.seq ?? undefined, enter);
        if (isRetryableCode(answer.code)) {
          abandon(new AttemptFailed(undefined, `re-entering ${routeOf(room)}: ${answer.code}`));
        }
        this.#room = undefined;
        this.#holder.clear();
        this.#emit("view", undefined);
        reentry = { kind: "lost", room, refusal };
        // What acted in the lost room is not sent again: the server would only
        // answer `not_in_lobby`.
        for (const [seq, pending] of this.#pending) {
          if (ACTS_IN_ROOM.has(pending.message.type)) {
            this.#pending.delete(seq);
            pending.reject(new RoomLostError(pending.message, routeOf(room), refusal));
          }
        }
      } else {
        reentry = { kind: "rejoined", room };
      }
    }
    if (this.#outage !== outage) {
      connection.close();
      return;
    }

    const notResent: ClientMessage[] = [];
    for (const [seq, pending] of this.#pending) {
      if (!pending.repeatable) {
        this.#pending.delete(seq);
        notResent.push(pending.message);
        pending.reject(new RequestNotResentError(pending.message));
      }
    }
    this.#outage = undefined;
    this.#reconnections += 1;
    this.#emit("reconnected", { cause: outage.cause, attempts: outage.attempts, room: reentry, notResent });
    for (const message of early) {
      this.#observe(message);
    }
    this.#adopt(connection);
    // Every unanswered request again, with its original `seq`, in order.
    const seqs = [...this.#pending.keys()].sort((a, b) => a - b);
    this.#queue.push(...seqs);
    this.#pump();
  }

  /** Whether a `leave` is unanswered. */
  #leaving(): boolean {
    return [...this.#pending.values()].some((pending) => pending.message.type === "leave");
  }

  /** The room a new connection names: the one the session is in, else the one an unanswered `join_lobby` or `watch` is for. */
  #route(): string | undefined {
    if (this.#room !== undefined) {
      return routeOf(this.#room).trim().toUpperCase();
    }
    const entering = [...this.#pending.values()]
      .map((pending) => pending.message)
      .filter((message) => message.type === "join_lobby" || message.type === "watch")
      .sort((a, b) => b.seq - a.seq)[0];
    return entering?.code.trim().toUpperCase();
  }

  #end(err: SessionEndedError): void {
    if (this.#ended !== undefined) {
      return;
    }
    this.#ended = err;
    this.#outage = undefined;
    this.#connection?.close(1000);
    this.#connection = undefined;
    clearTimeout(this.#queueTimer);
    this.#queue = [];
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.retryTimer);
      pending.reject(err);
    }
    this.#pending.clear();
    this.#emit("ended", err);
  }
}

function helloMessage(
  seq: number,
  protocol: ProtocolVersion,
  token: string | undefined,
  client: string,
  name: string | undefined,
): ClientMessage & { type: "hello" } {
  return {
    type: "hello",
    seq,
    protocol,
    client,
    ...(token === undefined ? {} : { token }),
    ...(name === undefined ? {} : { name }),
  };
}

/** Sends `hello` and waits for `welcome`; other messages go to `other`. */
async function greet(
  connection: Connection,
  hello: ClientMessage & { type: "hello" },
  timeoutMs: number,
  other: (message: ServerMessage) => void,
): Promise<ServerWelcome> {
  connection.send(hello);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const message = await connection.next(Math.max(deadline - Date.now(), 0), "waiting for welcome");
    if (message.type === "welcome") {
      return message;
    }
    if (message.type === "error" && message.seq === hello.seq) {
      const refusal = new JumpgateError(message.code, message.message, hello.seq, hello);
      throw new AttemptFailed(new SessionEndedError(`hello refused: ${message.code}: ${message.message}`, refusal), message.code);
    }
    other(message);
  }
}

/**
 * The request that enters `room` again. A player whose `leave` is still
 * unanswered sends `watch`, which gives back a seat the identity still holds
 * but never takes a free one, so the re-sent `leave` cannot concede a series
 * the first one did not.
 */
function reentryMessage(room: Room, seq: number, leaving: boolean): ClientMessage {
  if (room.kind === "solo") {
    return { type: "resume_solo", seq };
  }
  const invite = room.invite === undefined ? {} : { invite: room.invite };
  return room.seated && !leaving ? { type: "join_lobby", seq, code: room.code, ...invite } : { type: "watch", seq, code: room.code, ...invite };
}

function routeOf(room: Room): string {
  return room.kind === "lobby" ? room.code : room.id;
}

/** Whether trying again may work after `err`. */
function classify(err: unknown): AttemptFailed {
  if (err instanceof AttemptFailed) {
    return err;
  }
  if (err instanceof ConnectionClosed && !closeMeansReconnect(err.code)) {
    return new AttemptFailed(new SessionEndedError(`the server will not take this client back: ${err.message}`, undefined, err.code), err.message);
  }
  if (err instanceof SubprotocolError) {
    return new AttemptFailed(new SessionEndedError(err.message), err.message);
  }
  if (err instanceof ConnectionClosed || err instanceof StepTimeout) {
    return new AttemptFailed(undefined, err.message);
  }
  return new AttemptFailed(undefined, err instanceof Error ? err.message : String(err));
}

function describe(cause: Disconnect): string {
  switch (cause.kind) {
    case "closed":
      return `connection closed with code ${cause.code}`;
    case "room_unavailable":
      return "the room was unavailable";
    case "failed":
      return cause.why;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
