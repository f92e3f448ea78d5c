// A session outlives its server: the server is killed (SIGKILL) and started
// again on the same Redis and port, and each session reconnects by itself,
// greets again with its token, takes its seat back and re-sends the move it
// had no answer for, with its original seq; the server applies it once.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { decodeMessage, RequestNotResentError, RoomLostError, Session } from "../dist/index.js";
import { JumpgateServer, lobbyState, lossyWebSocket, nextEvent, RedisServer, roomV2, soloState, WebSocketClass } from "./harness.mjs";

let redis;
/** Each test normally takes well under a second; this only stops a hang. */
const LIMIT = 60_000;

let server;
before(async () => {
  redis = await RedisServer.start();
  server = await JumpgateServer.start({ redisUrl: redis.url });
});
after(async () => {
  await server?.kill();
  await redis?.stop();
});

// Short waits, so that the test does not sit out the default back-off.
const policy = { backoff: { firstMs: 100, maxMs: 1000, jitter: 0.5 }, maxAttempts: 60, giveUpAfterMs: 60_000 };

/** Two sessions in a lobby with a game in play; `moverSocket` is the WebSocket class of the side to move. */
async function gameInPlay(encoding, moverSocket) {
  const connect = (WebSocket) => Session.connect({ url: server.wsUrl, protocol: 1, encoding, client: "jumpgate-ts-test", WebSocket, policy });
  // The host moves first in a new lobby's first game (seat 0 is dark).
  const mover = await connect(moverSocket);
  const other = await connect(WebSocketClass);
  await mover.createLobby();
  const { code } = await lobbyState(mover, () => true);
  await other.joinLobby(code);
  const playing = await lobbyState(mover, (state) => state.phase === "playing");
  await lobbyState(other, (state) => state.phase === "playing");
  const moverSeat = playing.players.findIndex((player) => player?.id === mover.identity.id);
  assert.equal(playing.game.dark_seat, moverSeat, "the host is dark");
  const sent = [];
  mover.on("sent", (message) => sent.push(message));

  return { mover, other, code, choice: playing.game.legal_moves[0], sent, moverSeat };
}

/** What both tests check once the mover is back: the move re-sent as it was, acknowledged, and applied once. */
async function checkAppliedOnce({ mover, other, code, choice, sent, moverSeat }, answer, moveSeq, reconnection) {
  assert.equal(reconnection.room.kind, "rejoined");
  assert.equal(reconnection.room.room.code, code);
  const ack = await answer;
  assert.equal(ack.type, "ack");
  assert.equal(ack.seq, moveSeq, "the ack answers the move's own seq");

  const copies = sent.filter((message) => message.type === "move");
  assert.equal(copies.length, 2, "sent once before the outage and once after");
  for (const copy of copies) {
    assert.equal(copy.seq, moveSeq, "every copy carries the original seq");
    assert.deepStrictEqual(copy.path, choice.path);
  }
  const hello = sent.find((message) => message.type === "hello");
  assert.equal(hello?.token, mover.token, "greeted again with the token");
  assert.ok(hello.seq > moveSeq, "counting on from the last seq");
  const rejoin = sent.find((message) => message.type === "join_lobby");
  assert.equal(rejoin?.code, code, "took its seat back");
  assert.ok(sent.indexOf(rejoin) < sent.lastIndexOf(copies[1]), "re-entered before re-sending");

  const state = await lobbyState(other, (s) => s.game?.ply >= 1 && s.players.every((p) => p?.connected));
  assert.equal(state.game.ply, 1, "applied once");
  assert.deepStrictEqual(state.game.moves, [choice.notation]);
  assert.equal(state.players[moverSeat].id, mover.identity.id, "the same seat");
  assert.equal(state.game.turn, "light");

  // The game goes on after the restart.
  await other.move(state.game.legal_moves[0].path);
  const two = await lobbyState(mover, (s) => s.game?.ply === 2);
  assert.equal(two.game.moves.length, 2);
  mover.close();
  other.close();
}

for (const encoding of ["json", "msgpack"]) {
  test(`${encoding}: a move applied whose ack was lost is re-sent with its seq after a kill and restart, and applied once`, { timeout: LIMIT }, async () => {
    const { network, LossyWebSocket } = lossyWebSocket();
    const game = await gameInPlay(encoding, LossyWebSocket);
    network.dropIncoming = true;
    const answer = game.mover.move(game.choice.path);
    const moveSeq = game.mover.lastSeq;
    // The server applied and stored it: the other side sees it.
    await lobbyState(game.other, (state) => state.game?.ply === 1);
    const back = nextEvent(game.mover, "reconnected", () => true, 60_000);
    await server.kill();
    network.dropIncoming = false;
    await server.restart();
    await checkAppliedOnce(game, answer, moveSeq, await back);
  });

  test(`${encoding}: a move sent to a frozen server that is then killed is re-sent with its seq after the restart, and applied once`, { timeout: LIMIT }, async () => {
    const game = await gameInPlay(encoding, WebSocketClass);
    const back = nextEvent(game.mover, "reconnected", () => true, 60_000);
    await server.freeze();
    const answer = game.mover.move(game.choice.path);
    const moveSeq = game.mover.lastSeq;
    assert.ok(game.sent.some((message) => message.seq === moveSeq), "written to the frozen server's socket");
    // SIGKILL ends the stopped process with the move unread in its socket:
    // the copy after the restart must be acknowledged and the move applied
    // once.
    await server.kill();
    await server.restart();
    await checkAppliedOnce(game, answer, moveSeq, await back);
  });
}

test("protocol 2: a mover that lost its ack and the move's event takes its seat back after a kill and restart, and the snapshot it gets shows the move once", { timeout: LIMIT }, async () => {
  const { network, LossyWebSocket } = lossyWebSocket();
  const connect = (WebSocket) => Session.connect({ url: server.wsUrl, encoding: "msgpack", WebSocket, policy });
  const mover = await connect(LossyWebSocket);
  const other = await connect(WebSocketClass);
  await mover.createLobby();
  const { code } = await roomV2(mover, () => true);
  await other.joinLobby(code);
  const playing = await roomV2(mover, (room) => room.phase === "playing");
  await roomV2(other, (room) => room.phase === "playing");
  const [path] = playing.game.legal;
  const received = [];
  mover.on("message", (message) => received.push(message.type));

  network.dropIncoming = true;
  const answer = mover.move(path);
  const moved = await roomV2(other, (room) => room.game?.ply === 1);
  assert.equal(mover.view.state.version, playing.version, "the mover heard nothing of its move");
  const back = nextEvent(mover, "reconnected", () => true, 60_000);
  await server.kill();
  network.dropIncoming = false;
  await server.restart();
  const reconnection = await back;
  assert.equal(reconnection.room.kind, "rejoined");
  assert.equal((await answer).type, "ack");

  // The re-entry's snapshot replaced the room: the move is in it, once.
  const after = await roomV2(mover, (room) => room.game?.ply === 1 && room.players.every((p) => p?.connected));
  assert.ok(received.includes("snapshot"), "a snapshot after re-entering");
  assert.deepStrictEqual(after.game.moves, moved.game.moves);
  assert.deepStrictEqual(after.game.last_move.path, path);

  // Events go on from the snapshot's version.
  const reply = (await roomV2(other, (room) => room.game?.ply === 1 && room.game.turn === "light")).game.legal[0];
  await other.move(reply);
  const two = await roomV2(mover, (room) => room.game?.ply === 2);
  assert.deepStrictEqual(two.game.last_move.path, reply);
  assert.ok(received.lastIndexOf("moved") > received.lastIndexOf("snapshot"), "the reply came as an event");
  mover.close();
  other.close();
});

test("a seat taken whose state never arrived is taken back after a restart", { timeout: LIMIT }, async () => {
  const { network, LossyWebSocket } = lossyWebSocket();
  const connect = (WebSocket) => Session.connect({ url: server.wsUrl, protocol: 1, encoding: "json", WebSocket, policy });
  const host = await connect(WebSocketClass);
  const guest = await connect(LossyWebSocket);
  await host.createLobby();
  const { code } = await lobbyState(host, () => true);
  // The join's ack arrives; the state that follows it is lost.
  network.dropWhen = (data) => decodeMessage(data, "json").type === "state";
  // The bare request (joinLobby would wait for the state that never comes).
  await guest.request({ type: "join_lobby", code });
  await lobbyState(host, (state) => state.phase === "playing");
  assert.equal(guest.view, undefined, "no state reached the guest");
  assert.deepStrictEqual(guest.room, { kind: "lobby", code, seated: true }, "the ack alone puts it in the room");

  network.dropWhen = undefined;
  const back = nextEvent(guest, "reconnected", () => true, 60_000);
  await server.kill();
  await server.restart();
  const reconnection = await back;
  assert.equal(reconnection.room.kind, "rejoined");
  const state = await lobbyState(guest, (s) => s.phase === "playing");
  assert.ok(state.players.some((player) => player?.id === guest.identity.id), "in its seat");
  host.close();
  guest.close();
});

test("a solo game is resumed after a restart, and its unanswered move is not sent again", { timeout: LIMIT }, async () => {
  const session = await Session.connect({ url: server.wsUrl, protocol: 1, encoding: "msgpack", WebSocket: WebSocketClass, policy });
  await session.startSolo({ mode: "same_device" });
  const { id, game } = await soloState(session, () => true);
  assert.deepStrictEqual(session.room, { kind: "solo", id });
  const sent = [];
  session.on("sent", (message) => sent.push(message));
  const back = nextEvent(session, "reconnected", () => true, 60_000);
  // The solo_state that answers resume_solo on the new connection.
  const resumed = nextEvent(session, "view", (view) => view?.kind === "solo" && session.reconnections === 1, 60_000);

  // Solo moves are not de-duplicated by the server, so a move whose answer
  // was lost must not go again: the fresh solo_state tells what happened.
  await server.freeze();
  const outcome = session.move(game.legal_moves[0].path).then(
    () => "acknowledged",
    (err) => err,
  );
  const moveSeq = session.lastSeq;
  await server.kill();
  await server.restart();
  const reconnection = await back;
  const err = await outcome;
  assert.ok(err instanceof RequestNotResentError, String(err));
  assert.equal(err.request.seq, moveSeq);
  assert.deepStrictEqual(reconnection.room, { kind: "rejoined", room: { kind: "solo", id } });
  assert.deepStrictEqual(reconnection.notResent.map((message) => message.seq), [moveSeq]);
  assert.equal(sent.filter((message) => message.type === "move").length, 1, "sent once, to the frozen server");
  assert.ok(sent.some((message) => message.type === "resume_solo"), "resumed the game");
  assert.equal(sent.find((message) => message.type === "hello").seq, moveSeq + 1);

  // The resumed game shows the move never took effect: the frozen server
  // never read it.
  const fresh = (await resumed).state;
  assert.equal(fresh.id, id);
  assert.equal(fresh.game.ply, 0);
  assert.deepStrictEqual(fresh.game.moves, []);
  await session.move(fresh.game.legal_moves[0].path);
  const after = await soloState(session, (state) => state.game.ply === fresh.game.ply + 1);
  assert.equal(after.id, id);
  session.close();
});

test("a request made during the outage waits for the new connection", { timeout: LIMIT }, async () => {
  const session = await Session.connect({ url: server.wsUrl, protocol: 1, encoding: "json", WebSocket: WebSocketClass, policy });
  await session.createLobby();
  const { code } = await lobbyState(session, () => true);
  const disconnected = nextEvent(session, "disconnected");
  await server.kill();
  await disconnected;
  assert.equal(session.connected, false);
  const ping = session.ping();
  const pingSeq = session.lastSeq;
  await server.restart();
  const ack = await ping;
  assert.equal(ack.seq, pingSeq);
  assert.equal(session.room.code, code, "back in its lobby");
  assert.ok(session.reconnections >= 1);
  session.close();
});

test("two bots in the documented idiom play a whole game through two kills and restarts, with no move refused", { timeout: 180_000 }, async () => {
  const connect = () => Session.connect({ url: server.wsUrl, client: "jumpgate-ts-bot", WebSocket: WebSocketClass, policy });
  const host = await connect();
  const guest = await connect();
  await host.createLobby();
  const created = await host.waitForView((view) => view?.kind === "lobby_v2");
  await guest.joinLobby(created.state.code);
  // The loop protocol 2's README teaches: wait for our turn or the end, then play,
  // choosing each move from the view `play` resolved with.
  async function bot(session) {
    let played = 0;
    for (;;) {
      await session.waitForView(() => session.myTurn || session.finished);
      if (session.finished) return played;
      const legal = session.view.state.game.legal;
      const path = legal[played % legal.length];
      try {
        await session.play(path);
      } catch (err) {
        throw new Error(`move ${path.join("-")} after ${played} moves: ${err.code ?? ""} ${err.message}`);
      }
      played += 1;
    }
  }
  const playing = [bot(host), bot(guest)];
  for (const atPly of [6, 20]) {
    const reached = await host.waitForView((view) => host.finished || (view?.state.game?.ply ?? 0) >= atPly, 60_000);
    assert.ok(!host.finished, `the game ended before ply ${atPly}`);
    assert.ok(reached);
    await server.kill();
    await server.restart();
  }
  const moves = await Promise.all(playing);
  assert.ok(host.reconnections >= 2, `reconnections: ${host.reconnections}`);
  const room = host.view.state;
  // A drawn one-game series is played again: then its last game holds only some moves.
  if (room.series.round === 1) assert.equal(room.game.moves.length, moves[0] + moves[1], "every move played, once");
  host.close();
  guest.close();
});

test("a move in flight when a server without Redis restarts fails as RoomLostError, with the caller in its stack", { timeout: LIMIT }, async () => {
  const memory = await JumpgateServer.start();
  try {
    const connect = () => Session.connect({ url: memory.wsUrl, WebSocket: WebSocketClass, policy });
    const host = await connect();
    const guest = await connect();
    const created = await host.createLobby();
    await guest.joinLobby(created.state.code);
    await host.waitForView(() => host.myTurn);
    await memory.freeze();
    const playing = host.play(host.view.state.game.legal[0]);
    await memory.kill();
    await memory.restart();
    await assert.rejects(playing, (err) => {
      assert.ok(err instanceof RoomLostError, String(err));
      assert.equal(err.request.type, "move");
      assert.equal(err.room, created.state.code);
      assert.equal(err.refusal.code, "unknown_lobby");
      assert.match(err.stack, /the request was made:[\s\S]*reconnect\.test\.mjs/, err.stack);
      return true;
    });
    assert.equal(host.room, undefined, "in no room");
    host.close();
    guest.close();
  } finally {
    await memory.kill();
  }
});
