// Real processes for the tests: a `jumpgate serve` on a free loopback port
// (in memory, or on a Redis of the test's own) and a `redis-server`.
//
// The server binary is $JUMPGATE_BIN when set (the Rust e2e test that runs
// this suite sets it), else target/debug/jumpgate under $CARGO_TARGET_DIR or
// the repository's target/. Build it first with
// `cargo build -p jumpgate-server --bin jumpgate`.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import WebSocketFromWs from "ws";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** Signs guest tokens, the same for every start so tokens survive a restart. */
const TOKEN_SECRET = "jumpgate-ts-client-test-secret-0123456789";

/** Every test client shares 127.0.0.1, so the per-address limits are lifted. */
const UNLIMITED = {
  JUMPGATE_MAX_CONNECTIONS_PER_ADDRESS: "1000000000",
  JUMPGATE_MAX_CONNECTIONS_PER_IDENTITY: "1000000000",
  JUMPGATE_MESSAGES_PER_SECOND_PER_ADDRESS: "0",
  JUMPGATE_ROOMS_PER_MINUTE_PER_ADDRESS: "0",
  JUMPGATE_ROOMS_PER_MINUTE_PER_IDENTITY: "0",
  JUMPGATE_HTTP_REQUESTS_PER_SECOND_PER_ADDRESS: "0",
};

/**
 * The WebSocket the tests use: the platform's where Node has one (22 and
 * later), else the `ws` package's.
 */
export const WebSocketClass = globalThis.WebSocket ?? WebSocketFromWs;
export const webSocketName = globalThis.WebSocket ? "the platform WebSocket" : "the ws package";

export function jumpgateBinary() {
  const candidates = [
    process.env.JUMPGATE_BIN,
    process.env.CARGO_TARGET_DIR && path.join(process.env.CARGO_TARGET_DIR, "debug/jumpgate"),
    path.join(repoRoot, "target/debug/jumpgate"),
  ].filter(Boolean);
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) {
    throw new Error(
      `no jumpgate binary at ${candidates.join(" or ")}: run \`cargo build -p jumpgate-server --bin jumpgate\` or set JUMPGATE_BIN`,
    );
  }
  return found;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitUntil(what, check, limitMs = 30_000) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (await check()) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what} did not happen within ${limitMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function exited(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve();
    } else {
      child.once("exit", () => resolve());
    }
  });
}

/** A `jumpgate serve` process, SIGKILLed by `kill`. */
export class JumpgateServer {
  static async start({ port, redisUrl, env = {} } = {}) {
    const server = new JumpgateServer(port ?? (await freePort()), redisUrl, env);
    await server.#spawn();
    return server;
  }

  constructor(port, redisUrl, env) {
    this.port = port;
    this.redisUrl = redisUrl;
    this.env = env;
    this.child = undefined;
  }

  get wsUrl() {
    return `ws://127.0.0.1:${this.port}/ws`;
  }

  async #spawn() {
    const env = {
      ...process.env,
      ...UNLIMITED,
      JUMPGATE_TOKEN_SECRET: TOKEN_SECRET,
      // Started again on the same port it is the same instance, which takes
      // its rooms back at once.
      JUMPGATE_INSTANCE_ID: `ts-test-${this.port}`,
      RUST_LOG: "warn",
      // Memory unless the test names a Redis (never a data directory in
      // the source tree, nor one shared by two servers).
      JUMPGATE_MEMORY: "true",
      ...(this.redisUrl ? { JUMPGATE_REDIS_URL: this.redisUrl } : {}),
      ...this.env,
    };
    this.child = spawn(jumpgateBinary(), ["serve", "--listen", `127.0.0.1:${this.port}`], {
      env,
      stdio: ["ignore", "ignore", "inherit"],
    });
    const child = this.child;
    await waitUntil(`jumpgate on port ${this.port} ready`, async () => {
      if (child.exitCode !== null) {
        throw new Error(`jumpgate exited with ${child.exitCode}`);
      }
      try {
        const response = await fetch(`http://127.0.0.1:${this.port}/readyz`);
        return response.status === 200;
      } catch {
        return false;
      }
    });
  }

  /** SIGKILL: no chance to tidy up or hand rooms over. */
  async kill() {
    if (this.child) {
      const child = this.child;
      this.child = undefined;
      child.kill("SIGKILL");
      await exited(child);
    }
  }

  /** Sends a signal without waiting. */
  signal(name) {
    this.child?.kill(name);
  }

  /**
   * SIGSTOP, as a stalled machine would freeze, and waits until every
   * thread of the process is stopped (kill(2) returns before the stop
   * lands), so nothing sent afterwards is read before the freeze.
   */
  async freeze() {
    const pid = this.child?.pid;
    this.child?.kill("SIGSTOP");
    if (pid === undefined) return;
    const stopped = () => {
      const tasks = readdirSync(`/proc/${pid}/task`);
      return tasks.every((task) => {
        const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8");
        const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
        return state === "T" || state === "t";
      });
    };
    await waitUntil(`jumpgate (pid ${pid}) stopped`, async () => stopped());
  }

  /** Starts the process again on the same port and store. */
  async restart() {
    await this.kill();
    await this.#spawn();
  }
}

/** A `redis-server` on a free port with its data in a temporary directory (AOF, fsync always). */
export class RedisServer {
  static async start() {
    const redis = new RedisServer(await freePort(), mkdtempSync(path.join(os.tmpdir(), "jumpgate-ts-redis-")));
    redis.child = spawn(
      "redis-server",
      ["--port", String(redis.port), "--bind", "127.0.0.1", "--dir", redis.dir, "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
      { stdio: "ignore" },
    );
    await waitUntil("redis-server ready", () => redisPing(redis.port));
    return redis;
  }

  constructor(port, dir) {
    this.port = port;
    this.dir = dir;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  /** Sends one command on a fresh connection; resolves with the raw reply. */
  command(...args) {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.port, "127.0.0.1");
      socket.once("error", reject);
      socket.once("data", (data) => {
        socket.destroy();
        resolve(data.toString());
      });
      socket.once("connect", () => socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`));
    });
  }

  /**
   * Stalls every client of this Redis for `ms` (`CLIENT PAUSE ms ALL`):
   * commands queue and run when the pause ends, as after a slow fsync.
   */
  async pause(ms) {
    const reply = await this.command("CLIENT", "PAUSE", String(ms), "ALL");
    if (!reply.startsWith("+OK")) {
      throw new Error(`CLIENT PAUSE answered ${reply}`);
    }
  }

  async stop() {
    if (this.child) {
      const child = this.child;
      this.child = undefined;
      child.kill("SIGKILL");
      await exited(child);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function redisPing(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("error", () => resolve(false));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("+PONG"));
    });
    socket.once("connect", () => socket.write("PING\r\n"));
  });
}

/**
 * A WebSocket class whose sockets lose every message from the server while
 * `network.dropIncoming` is set, as a connection whose last packets never
 * arrive: the server has answered, the client never hears it (or, with
 * `network.dropWhen`, only the frames it picks are lost).
 */
export function lossyWebSocket(Base = WebSocketClass) {
  /** `dropWhen(data)` drops only the frames it is true for. */
  const network = { dropIncoming: false, dropWhen: undefined };
  class LossyWebSocket extends Base {
    get onmessage() {
      return super.onmessage;
    }
    set onmessage(handler) {
      super.onmessage = handler && ((event) => (network.dropIncoming || network.dropWhen?.(event.data) ? undefined : handler(event)));
    }
  }
  return { network, LossyWebSocket };
}

/** Resolves with the first `event` value of `session` for which `accept` holds. */
export function nextEvent(session, event, accept = () => true, limitMs = 20_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no ${event} event within ${limitMs} ms`));
    }, limitMs);
    const stop = session.on(event, (value) => {
      if (accept(value)) {
        clearTimeout(timer);
        stop();
        resolve(value);
      }
    });
  });
}

/** Resolves with the session's lobby state once `accept(state)` holds (at once if it already does). */
export function lobbyState(session, accept) {
  return viewState(session, "lobby", accept);
}

/** Resolves with a protocol 2 session's room once `accept(room)` holds (at once if it already does). */
export function roomV2(session, accept) {
  return viewState(session, "lobby_v2", accept);
}

/** Resolves with the session's solo game state once `accept(state)` holds (at once if it already does). */
export function soloState(session, accept) {
  return viewState(session, "solo", accept);
}

function viewState(session, kind, accept) {
  const view = session.view;
  if (view?.kind === kind && accept(view.state)) {
    return Promise.resolve(view.state);
  }
  return nextEvent(session, "view", (v) => v?.kind === kind && accept(v.state)).then(
    (v) => v.state,
    (err) => {
      const state = session.view?.state;
      const summary = state && {
        kind: session.view.kind,
        version: state.version,
        phase: state.phase,
        ply: state.game?.ply,
        connected: state.players?.map((p) => p?.connected),
      };
      throw new Error(`${err.message}; the last view: ${JSON.stringify(summary)}, connected: ${session.connected}`);
    },
  );
}
