// Redis stalls for longer than the server's limit for one command while a
// move is being stored: the server answers `storage_unavailable`, and the
// session sends the same move again, with the same seq, until the room knows
// the outcome, on the same connection. The move is applied once.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Session } from "../dist/index.js";
import { JumpgateServer, lobbyState, RedisServer, WebSocketClass } from "./harness.mjs";

/** Each test normally takes a few seconds; this only stops a hang. */
const LIMIT = 60_000;
/** The server's limit for one Redis command, and a stall well past it. */
const REDIS_TIMEOUT_MS = 300;
const STALL_MS = 1_500;

let redis;
let server;
before(async () => {
  redis = await RedisServer.start();
  server = await JumpgateServer.start({ redisUrl: redis.url, env: { JUMPGATE_REDIS_TIMEOUT_MS: String(REDIS_TIMEOUT_MS) } });
});
after(async () => {
  await server?.kill();
  await redis?.stop();
});

const policy = { backoff: { firstMs: 100, maxMs: 500, jitter: 0.5 }, maxAttempts: 60, giveUpAfterMs: 60_000 };

for (const encoding of ["json", "msgpack"]) {
  test(`${encoding}: a move answered storage_unavailable is sent again with its seq until acknowledged, and applied once`, { timeout: LIMIT }, async () => {
    const connect = () => Session.connect({ url: server.wsUrl, protocol: 1, encoding, WebSocket: WebSocketClass, policy });
    const mover = await connect();
    const other = await connect();
    await mover.createLobby();
    const { code } = await lobbyState(mover, () => true);
    await other.joinLobby(code);
    const playing = await lobbyState(mover, (state) => state.phase === "playing");
    await lobbyState(other, (state) => state.phase === "playing");
    const [choice] = playing.game.legal_moves;
    const sent = [];
    const refusalsSeen = [];
    mover.on("sent", (message) => sent.push(message));
    mover.on("message", (message) => message.type === "error" && refusalsSeen.push(message.code));

    await redis.pause(STALL_MS);
    const ack = await mover.move(choice.path);
    const copies = sent.filter((message) => message.type === "move");
    assert.equal(ack.seq, copies[0].seq);
    assert.ok(copies.length >= 2, `the move went ${copies.length} time(s): the stall was not seen`);
    assert.ok(copies.every((copy) => copy.seq === ack.seq && copy.path.join() === choice.path.join()), "the same seq and content each time");
    assert.deepStrictEqual(refusalsSeen, [], "the retryable refusals stayed inside the session");
    assert.equal(mover.reconnections, 0, "on the same connection");

    const state = await lobbyState(other, (s) => s.game?.ply >= 1);
    assert.equal(state.game.ply, 1, "applied once");
    assert.deepStrictEqual(state.game.moves, [choice.notation]);
    mover.close();
    other.close();
  });
}
