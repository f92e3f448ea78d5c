// How the web client's connection comes back, step by step, run by
// tests/tests/e2e/browser.rs:
//
//   node tests/browser/reconnect.mjs <base-url> <artifact-dir>
//
// Loads server/web/connection.js from the server into Chromium and drives it
// against a scripted socket and a clock that moves only when told, so that
// what no real server does on demand can be checked exactly: a room that
// moved (close 4001) is rejoined at once and the unanswered move sent again
// with its own `seq`; `room_unavailable`, for a join or a re-entry, brings a
// new connection naming the room after a growing back-off, a bounded number
// of times; a restart (`shutdown` and 1001) is waited out as asked.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { chromium } from 'playwright-core';

const [base] = process.argv.slice(2);
if (!base) {
  console.error('usage: node reconnect.mjs <base-url> <artifact-dir>');
  process.exit(2);
}

/** Runs in the page: returns the steps it checked, throws on the first failure. */
async function checkConnection() {
  const { Connection } = await import('/assets/connection.js');
  const { joinLobby, movePath } = await import('/assets/protocol.js');
  const steps = [];
  const check = (condition, message) => {
    if (!condition) throw new Error(`check failed: ${message}`);
  };
  const step = (name) => steps.push(name);

  // The clock: timers wait until fired, one at a time.
  const runMacrotask = window.setTimeout.bind(window);
  const settle = () => new Promise((resolve) => runMacrotask(resolve, 0));
  const timers = new Map();
  let nextTimer = 1;
  window.setTimeout = (fn, delay) => {
    timers.set(nextTimer, { fn, delay });
    return nextTimer++;
  };
  window.clearTimeout = (id) => timers.delete(id);
  /** Fires the one pending timer; returns the delay it was set with. */
  const fireTimer = async () => {
    check(timers.size === 1, `one timer is pending (${timers.size})`);
    const [[id, { fn, delay }]] = timers;
    timers.delete(id);
    fn();
    await settle();
    return delay;
  };

  // The server side of each socket the connection opens.
  const sockets = [];
  class ScriptedSocket extends EventTarget {
    static OPEN = 1;
    constructor(url, protocols) {
      super();
      this.url = url;
      this.protocol = protocols[0];
      this.readyState = 0;
      this.sent = [];
      this.closedWith = null;
      sockets.push(this);
    }
    send(text) {
      this.sent.push(JSON.parse(text));
    }
    close(code) {
      this.readyState = 3;
      this.closedWith = code;
    }
    accept() {
      this.readyState = 1;
      this.dispatchEvent(new Event('open'));
    }
    async receive(message) {
      this.dispatchEvent(new MessageEvent('message', { data: JSON.stringify(message) }));
      await settle();
    }
    async drop(code) {
      this.readyState = 3;
      this.dispatchEvent(new CloseEvent('close', { code }));
      await settle();
    }
    last() {
      return this.sent.at(-1);
    }
  }
  window.WebSocket = ScriptedSocket;
  const socket = () => sockets.at(-1);

  const identity = { id: 'g_test', name: 'Guest-TEST', guest: true };
  /** Opens the newest socket and welcomes it. */
  const welcome = async () => {
    socket().accept();
    check(socket().last().type === 'hello', 'hello first');
    await socket().receive({ type: 'welcome', server_version: 'test', protocols: [1], identity, token: 'kept-token' });
  };
  const reply = (message, answer) => socket().receive({ ...answer, seq: message.seq });
  const ack = (message) => reply(message, { type: 'ack' });
  const refuse = (message, code) => reply(message, { type: 'error', code, message: code });
  const room = 'ABCDEFGH';
  const roomUrl = `ws://test/ws?room=${room}`;

  localStorage.clear();
  const connection = new Connection('ws://test/ws', localStorage);
  const statuses = [];
  const notices = [];
  connection.addEventListener('status', ({ detail }) => statuses.push(detail));
  connection.addEventListener('notice', ({ detail }) => notices.push(detail.code));
  connection.start();
  await welcome();
  check(statuses.at(-1) === 'online', 'online after welcome');

  step('a join refused with room_unavailable is sent again on a new connection naming the room');
  connection.retarget(room);
  check(socket().url === roomUrl, `the connection names the room: ${socket().url}`);
  await welcome();
  let joined = false;
  connection.request(joinLobby(room)).then(() => { joined = true; });
  await settle();
  const join = socket().last();
  check(join.type === 'join_lobby' && join.code === room, 'join_lobby is sent');
  const refused = socket();
  await refuse(join, 'room_unavailable');
  check(refused.closedWith === 1000, 'the refused connection is closed');
  check(statuses.at(-1) === 'offline', 'the page shows "reconnecting"');
  const firstWait = await fireTimer();
  check(firstWait >= 250 && firstWait <= 750, `the first wait is 0.5 s ± 50 % (${firstWait})`);
  check(socket().url === roomUrl, `the new connection names the room: ${socket().url}`);
  await welcome();
  check(JSON.stringify(socket().last()) === JSON.stringify(join), 'the same join, same seq, goes again');
  check(!joined, 'the join is still unanswered');
  await ack(join);
  check(joined, 'the join is answered');
  check(statuses.at(-1) === 'online', 'online again');
  connection.enterRoom({ code: room, invite: null, role: 'player' });

  step('close 4001: back at once naming the room, rejoined, the unanswered move sent again');
  let moved = false;
  connection.request(movePath(['c3', 'd4'])).then(() => { moved = true; });
  await settle();
  const move = socket().last();
  check(move.type === 'move', 'the move is sent');
  await socket().receive({ type: 'shutdown', reason: 'the room moved to another server instance', reconnect_after_ms: 0 });
  await socket().drop(4001);
  check(statuses.at(-1) === 'offline', 'the page shows "reconnecting"');
  const movedWait = await fireTimer();
  check(movedWait <= 250, `back at once, with at most 250 ms of jitter (${movedWait})`);
  check(socket().url === roomUrl, `the new connection names the room: ${socket().url}`);
  await welcome();
  const rejoin = socket().last();
  check(rejoin.type === 'join_lobby' && rejoin.code === room && rejoin.seq > move.seq, 'the player rejoins with a new seq');
  await ack(rejoin);
  check(JSON.stringify(socket().last()) === JSON.stringify(move), 'then the same move, same seq, goes again');
  check(statuses.at(-1) === 'online', 'online again');
  await ack(move);
  check(moved, 'the move is answered');

  step('a re-entry refused with room_unavailable is asked again on a new connection; the room is kept');
  await socket().drop(1006);
  await fireTimer();
  await welcome();
  await refuse(socket().last(), 'room_unavailable');
  check(connection.room?.code === room, 'the room is still remembered');
  check(statuses.at(-1) === 'offline', 'the page shows "reconnecting"');
  await fireTimer();
  check(socket().url === roomUrl, `the new connection names the room: ${socket().url}`);
  await welcome();
  await ack(socket().last());
  check(statuses.at(-1) === 'online' && notices.length === 0, 'back in the room, with nothing to tell');

  step('room_unavailable again and again: growing waits, then the refusal stands');
  await socket().drop(1006);
  await fireTimer();
  const waits = [];
  for (;;) {
    await welcome();
    const reentry = socket().last();
    check(reentry.type === 'join_lobby', 'the player rejoins');
    await refuse(reentry, 'room_unavailable');
    if (timers.size === 0) break;
    check(waits.length < 10, 'the retries are bounded');
    waits.push(await fireTimer());
  }
  check(waits.length === 6, `six retries (${waits.length})`);
  waits.forEach((wait, i) => {
    const middle = Math.min(8000, 500 * 2 ** i);
    check(wait >= middle / 2 && wait <= middle * 1.5, `wait ${i} is ${middle} ms ± 50 % (${wait})`);
  });
  check(notices.join() === 'room_unavailable', `the refusal is told once (${notices.join()})`);
  check(connection.room === null, 'the room is given up');
  check(statuses.at(-1) === 'online', 'the connection itself is up');

  step('a restart (shutdown, then 1001) is waited out as asked');
  await socket().receive({ type: 'shutdown', reason: 'the server is restarting', reconnect_after_ms: 1000 });
  await socket().drop(1001);
  const restartWait = await fireTimer();
  check(restartWait >= 1000 && restartWait <= 2000, `waits 1 to 2 s (${restartWait})`);
  await welcome();
  check(statuses.at(-1) === 'online', 'online again');
  return steps;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failed = false;
try {
  const page = await browser.newPage({ baseURL: base });
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (error) => {
    console.error(`page error: ${error.message}`);
    failed = true;
  });
  // A page of the server's own, so the client's modules load from it.
  await page.goto('/healthz');
  for (const name of await page.evaluate(checkConnection)) console.log(`- ${name}`);
} catch (error) {
  console.error(error.stack ?? String(error));
  failed = true;
} finally {
  await browser.close();
}
if (failed) process.exit(1);
console.log('the connection comes back as it should');
