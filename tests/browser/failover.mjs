// The web client follows its lobby to another server instance, run by
// tests/tests/e2e/browser.rs:
//
//   node tests/browser/failover.mjs <balancer-url> <artifact-dir>
//
// Three instances on one Redis behind HAProxy (the deployed configuration).
// Two guests open the game through the balancer: the host creates a lobby,
// the guest joins it by code, and the host moves. The script then prints
// `room CODE` and waits for a line `stopped NAME` on stdin: meanwhile the
// test shuts down the instance the balancer sends that code to, which hands
// the lobby over and closes both pages' sockets with 4001. With nobody
// touching them, both pages must come back through the balancer naming the
// lobby, show the game as it was, and play on: each side's next move is seen
// by the other.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const [base, artifacts] = process.argv.slice(2);
if (!base || !artifacts) {
  console.error('usage: node failover.mjs <balancer-url> <artifact-dir>');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const TIMEOUT = 15_000;
const failures = [];

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

function step(name) {
  console.log(`- ${name}`);
}

/** Lines from the test on stdin, one at a time. */
const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function lineFromTest() {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('no answer from the test on stdin')), TIMEOUT);
  });
  try {
    const { value, done } = await Promise.race([stdin.next(), late]);
    check(!done, 'the test answers on stdin');
    return value;
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until `condition()` holds, checking every 50 ms; fails after TIMEOUT. */
async function until(condition, what) {
  for (const started = Date.now(); !condition(); ) {
    check(Date.now() - started < TIMEOUT, what);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

/**
 * A page in its own context (its own guest), with what it receives kept in
 * `page.seen`: the address of every socket it opens, and how many `shutdown`
 * notices said "come back at once" (a room that moved: close 4001). Every
 * notice the page shows is kept in its `window.shownNotices`.
 */
async function newPage(name) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, baseURL: base });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.seen = { sockets: [], moved: 0 };
  page.on('pageerror', (error) => failures.push(`${name}: page error: ${error.message}`));
  page.on('console', (m) => {
    // Chromium logs a socket that fails to open as an error; reconnecting
    // after that is the client's job, and the checks below see the outcome.
    if (m.type() === 'error' && !m.text().startsWith('WebSocket connection to')) {
      failures.push(`${name}: console error: ${m.text()}`);
    }
  });
  page.on('websocket', (socket) => {
    page.seen.sockets.push(socket.url());
    socket.on('framereceived', ({ payload }) => {
      const message = typeof payload === 'string' ? JSON.parse(payload) : null;
      if (message?.type === 'shutdown' && message.reconnect_after_ms === 0) page.seen.moved += 1;
    });
  });
  await page.addInitScript(() => {
    window.shownNotices = [];
    addEventListener('DOMContentLoaded', () => {
      const box = document.getElementById('notice');
      new MutationObserver(() => {
        if (!box.hidden) window.shownNotices.push(`${box.className}: ${box.textContent}`);
      }).observe(box, { attributes: true, childList: true, characterData: true, subtree: true });
    });
  });
  return page;
}

const square = (page, name) => page.locator(`.square[data-square="${name}"]`);

async function waitPiece(page, name, color) {
  await page.locator(`.square[data-square="${name}"] .piece.${color}`).waitFor();
}

async function waitText(page, id, pattern) {
  await page.waitForFunction(
    ([el, source, flags]) => new RegExp(source, flags).test(document.getElementById(el).textContent),
    [id, pattern.source, pattern.flags],
  );
}

async function clickPath(page, path) {
  for (const name of path) await square(page, name).click();
}

try {
  const host = await newPage('host');
  const guest = await newPage('guest');

  step('the host creates an American lobby through the balancer');
  await host.goto('/');
  await host.locator('#create-form').waitFor();
  await host.selectOption('#rule-set', 'american');
  await host.check('input[name=series_length][value="1"]');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  const code = await host.textContent('#invite-code');
  check(/^[2-9A-HJ-NP-Z]{8}$/.test(code), `a lobby code: ${code}`);

  step('the guest joins by code; the host moves');
  await guest.goto('/');
  await guest.fill('#join-code', code);
  await guest.click('#join-button');
  await guest.click('#preview-join');
  await waitText(host, 'status', /^Your turn/);
  await waitText(guest, 'status', /to move/);
  await clickPath(host, ['c3', 'd4']);
  await waitPiece(guest, 'd4', 'dark');
  await waitText(guest, 'status', /^Your turn/);

  step('the instance holding the lobby shuts down');
  const counts = (page) => ({ sockets: page.seen.sockets.length, moved: page.seen.moved });
  const before = { host: counts(host), guest: counts(guest) };
  console.log(`room ${code}`);
  const answer = await lineFromTest();
  check(/^stopped jumpgate[1-3]$/.test(answer), `the test stopped an instance: ${answer}`);

  step('both pages are told the lobby moved, and come back naming it');
  for (const [name, page] of [['host', host], ['guest', guest]]) {
    await until(() => page.seen.moved > before[name].moved, `${name} is told the room moved (close 4001)`);
    await until(() => page.seen.sockets.length > before[name].sockets, `${name} opens a new socket`);
    const url = page.seen.sockets.at(-1);
    check(url.endsWith(`/ws?room=${code}`), `${name}'s new socket names the lobby: ${url}`);
    await waitText(page, 'connection-status', /^Online$/);
  }
  await waitPiece(host, 'd4', 'dark');
  await waitPiece(guest, 'd4', 'dark');
  check(/you/.test(await host.textContent('#seat-bottom')), 'the host still holds the seat');
  check(/you/.test(await guest.textContent('#seat-bottom')), 'the guest still holds the seat');

  step('the game goes on: a move each, seen by the other');
  await waitText(guest, 'status', /^Your turn/);
  await clickPath(guest, ['f6', 'e5']);
  await waitPiece(host, 'e5', 'light');
  await waitText(host, 'status', /must capture/);
  await clickPath(host, ['d4', 'f6']);
  await waitPiece(guest, 'f6', 'dark');
  await guest.locator('.square[data-square="e5"] .piece').waitFor({ state: 'detached' });
  await host.screenshot({ path: join(artifacts, 'failover.png') });

  // A room moving between instances is the servers' business: no error, no
  // "the server is restarting", nothing for the players to read.
  for (const [name, page] of [['host', host], ['guest', guest]]) {
    const notices = await page.evaluate(() => window.shownNotices);
    check(notices.length === 0, `${name} showed no notice: ${notices.join(' | ')}`);
  }
} catch (error) {
  failures.push(error.stack ?? String(error));
  for (const [i, context] of browser.contexts().entries()) {
    for (const page of context.pages()) {
      await page.screenshot({ path: join(artifacts, `failure-${i}.png`) }).catch(() => {});
    }
  }
} finally {
  await browser.close();
}

if (failures.length > 0) {
  console.error(failures.join('\n'));
  process.exit(1);
}
console.log('the lobby followed its players to another instance');
process.exit(0);
