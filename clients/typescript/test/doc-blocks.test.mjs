// Every `ts` code block of the package's README and of CLIENTS.md, type-checked
// against the built package (dist/) with tsc --strict, so a snippet that no
// longer matches the API fails the suite. Each block becomes a module: its
// imports at the top (the package's name pointing at dist/), the rest inside an
// async function, with the names the prose supplies (`session`, `host`, `url`,
// `game`, ...) declared around it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const sources = [path.join(packageRoot, "README.md"), path.resolve(packageRoot, "../../CLIENTS.md")];

/** The names the documents' prose gives the snippets. */
const AMBIENT = `
declare const session: Session;
declare const host: Session;
declare const guest: Session;
declare const url: string;
declare const game: Parameters<typeof import("../../dist/index.js").legalMoves>[0];
declare function showBanner(text: string): void;
declare function hideBanner(): void;
declare const localStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
`;

function blocks(file) {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

function moduleFor(block) {
  const lines = block.split("\n");
  const imports = lines.filter((l) => l.startsWith("import "));
  const body = lines.filter((l) => !l.startsWith("import "));
  const header = imports.map((l) => l.replace('"@jumpgate/client"', '"../../dist/index.js"'));
  if (!imports.some((l) => /\bSession\b/.test(l) && l.includes("@jumpgate/client"))) {
    header.push('import { Session } from "../../dist/index.js";');
  }
  return `${header.join("\n")}\n${AMBIENT}\nexport async function snippet(): Promise<void> {\n${body.join("\n")}\n}\n`;
}

test("every ts block of the README and CLIENTS.md type-checks against the package", () => {
  const dir = path.join(packageRoot, "test", ".doc-blocks");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const files = [];
  for (const source of sources) {
    blocks(source).forEach((block, i) => {
      const file = path.join(dir, `${path.basename(source, ".md").toLowerCase()}-${i}.ts`);
      writeFileSync(file, moduleFor(block));
      files.push(file);
    });
  }
  assert.ok(files.length >= 8, `found ${files.length} blocks`);
  const tsc = path.join(packageRoot, "node_modules", ".bin", "tsc");
  const run = spawnSync(
    tsc,
    ["--ignoreConfig", "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--types", "node", ...files],
    { cwd: packageRoot, encoding: "utf8" },
  );
  assert.equal(run.status, 0, `tsc found errors in the documents' code:\n${run.stdout}${run.stderr}`);
  rmSync(dir, { recursive: true, force: true });
});

// Running them. Each block runs as the async body of a module (types stripped
// by esbuild), against a real server, with the names the prose supplies made
// real: `url` is the server's address, `session` a connected session seated in
// a lobby whose other seat plays `legal[0]` whenever it is its turn (unless the
// block joins that lobby itself), `host` and `guest` fresh sessions (the host
// then plays the same way), `game` the session's game once it is its turn, and
// `localStorage` a map. The documents' example address and room code,
// "ws://127.0.0.1:8080/ws" and "K7QP2DXM", are replaced by the server's and
// that lobby's. A block passes when it ends without throwing within a minute.
const { transform } = await import("esbuild");
const { JumpgateServer, WebSocketClass } = await import("./harness.mjs");
const { Session } = await import("../dist/index.js");

const SUPPLIED = ["session", "host", "guest", "url", "game", "showBanner", "hideBanner", "localStorage"];
const BLOCK_LIMIT_MS = 60_000;

async function runnable(block, file, server, code) {
  const lines = block.split("\n");
  const imports = lines
    .filter((l) => l.startsWith("import "))
    .map((l) => l.replace('"@jumpgate/client"', JSON.stringify(new URL("../dist/index.js", import.meta.url).href)));
  const body = lines
    .filter((l) => !l.startsWith("import "))
    .join("\n")
    .replaceAll('"ws://127.0.0.1:8080/ws"', JSON.stringify(server.wsUrl))
    .replaceAll('"K7QP2DXM"', JSON.stringify(code));
  const declared = [...body.matchAll(/^(?:const|let) (\w+)/gm)].map((m) => m[1]);
  const supplied = SUPPLIED.filter((name) => !declared.includes(name) && new RegExp(`\\b${name}\\b`).test(body));
  if (!imports.some((l) => /\bSession\b/.test(l))) {
    imports.push(`import { Session } from ${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)};`);
  }
  const source = `${imports.join("\n")}
export const supplied = ${JSON.stringify(supplied)};
export async function snippet({ ${supplied.join(", ")} }) {
${body}
return { ${declared.join(", ")} };
}
`;
  const { code: js } = await transform(source, { loader: "ts", format: "esm", target: "es2022" });
  writeFileSync(file, js);
  return { supplied, uses: (name) => new RegExp(`\\b${name}\\b`).test(body) };
}

/** Plays `legal[0]` whenever it is `player`'s turn, until `stop()` (after closing it). */
function playAlong(player) {
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      try {
        await player.waitForView(() => stopped || player.myTurn, 2_000);
      } catch {
        continue;
      }
      if (stopped) break;
      const game = player.view?.state?.game;
      if (game?.legal?.length) await player.play(game.legal[0]).catch(() => {});
    }
  })();
  return async () => {
    stopped = true;
    await done;
  };
}

test("every ts block of the README and CLIENTS.md runs against a real server", { timeout: 20 * BLOCK_LIMIT_MS }, async () => {
  if (!globalThis.WebSocket) {
    // Node 20 has no WebSocket of its own; the README's Node 20 block passes
    // `ws`, the others are written for Node 22 and browsers.
    globalThis.WebSocket = WebSocketClass;
  }
  const server = await JumpgateServer.start();
  const dir = path.join(packageRoot, "test", ".doc-runs");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const connect = () => Session.connect({ url: server.wsUrl, client: "doc-blocks-test" });
  let ran = 0;
  try {
    for (const source of sources) {
      for (const [i, block] of blocks(source).entries()) {
        const name = `${path.basename(source, ".md").toLowerCase()}-${i}`;
        const opponent = await connect();
        const lobby = await opponent.createLobby({ rule_set: "american" });
        const code = lobby.state.code;
        const file = path.join(dir, `${name}.mjs`);
        const { supplied, uses } = await runnable(block, file, server, code);
        const env = {
          url: server.wsUrl,
          showBanner() {},
          hideBanner() {},
          localStorage: new Map(),
        };
        env.localStorage.getItem = (key) => Map.prototype.get.call(env.localStorage, key) ?? null;
        env.localStorage.setItem = (key, value) => Map.prototype.set.call(env.localStorage, key, String(value));
        const opened = [opponent];
        const stops = [playAlong(opponent)];
        if (supplied.includes("session")) {
          env.session = await connect();
          opened.push(env.session);
          if (!uses("joinLobby")) {
            await env.session.joinLobby(code);
          }
          if (supplied.includes("game")) {
            await env.session.waitForView(() => env.session.myTurn, BLOCK_LIMIT_MS);
            env.game = env.session.view.state.game;
          }
        }
        for (const seat of ["host", "guest"].filter((n) => supplied.includes(n))) {
          env[seat] = await connect();
          opened.push(env[seat]);
        }
        if (env.host) stops.push(playAlong(env.host));
        const { snippet } = await import(file);
        let timer;
        const limit = new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`${name} did not end within ${BLOCK_LIMIT_MS} ms`)), BLOCK_LIMIT_MS);
        });
        let locals;
        try {
          locals = await Promise.race([snippet(env), limit]);
        } catch (err) {
          assert.fail(`${name} (${source}) failed: ${err?.stack ?? err}\n--- the block:\n${block}`);
        } finally {
          clearTimeout(timer);
          for (const value of Object.values(locals ?? {})) {
            if (value instanceof Session) value.close();
          }
          // Closing ends the players' waits at once.
          for (const session of opened) session.close();
          for (const stop of stops) await stop();
        }
        ran += 1;
      }
    }
  } finally {
    await server.kill();
  }
  assert.ok(ran >= 10, `ran ${ran} blocks`);
  rmSync(dir, { recursive: true, force: true });
});
