// Browser scenarios for the Jumpgate web client, run by tests/tests/browser.rs:
//
//   node tests/browser/scenario.mjs <base-url> <artifact-dir>
//
// Drives Debian's Chromium (never a downloaded browser) through Playwright.
// Three browser contexts (separate storage, so three guests): the host
// creates an invite-only lobby, the guest opens the invite link, a third
// opens it too, finds the lobby full and watches. They play by clicks, by
// drag and by keyboard, reload mid-game, draw two rounds by agreement,
// rematch with seats swapped, end the match and download the PDN. A fourth
// plays the computer (practice, with undo), then a same-device game, and
// opens the leaderboards.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [base, artifacts] = process.argv.slice(2);
if (!base || !artifacts) {
  console.error('usage: node scenario.mjs <base-url> <artifact-dir>');
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

// Playwright gives every launch() a fresh temporary profile (user data dir).
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});

async function newPage(name, viewport) {
  const context = await browser.newContext({ viewport, baseURL: base });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.on('pageerror', (error) => failures.push(`${name}: page error: ${error.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') failures.push(`${name}: console error: ${m.text()}`);
  });
  page.on('dialog', (dialog) => dialog.accept());
  // The types of the frames each way, to check which protocol the page speaks.
  page.frameTypes = new Map();
  page.sentTypes = new Map();
  const count = (types, payload) => {
    let type = 'unreadable';
    try {
      type = JSON.parse(String(payload)).type;
    } catch {}
    types.set(type, (types.get(type) ?? 0) + 1);
  };
  page.on('websocket', (socket) => {
    socket.on('framereceived', ({ payload }) => count(page.frameTypes, payload));
    socket.on('framesent', ({ payload }) => count(page.sentTypes, payload));
  });
  // Nothing may be loaded from other sites.
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(base) && !url.startsWith(base.replace(/^http/, 'ws'))) {
      failures.push(`${name}: request to another site: ${url}`);
    }
  });
  return page;
}

const square = (page, name) => page.locator(`.square[data-square="${name}"]`);

async function waitPiece(page, name, color) {
  await page.locator(`.square[data-square="${name}"] .piece.${color}`).waitFor();
}

async function waitEmpty(page, name) {
  await page.waitForFunction((sq) => !document.querySelector(`.square[data-square="${sq}"] .piece`), name);
}

async function waitStatus(page, pattern) {
  await page.waitForFunction(
    ([source, flags]) => new RegExp(source, flags).test(document.getElementById('status').textContent),
    [pattern.source, pattern.flags],
  );
}

async function clickPath(page, path) {
  for (const name of path) await square(page, name).click();
}

async function markedSquares(page, cls) {
  return page.$$eval(`.square.${cls}`, (cells) => cells.map((c) => c.dataset.square).sort());
}

async function drag(page, from, to) {
  const a = await square(page, from).boundingBox();
  const b = await square(page, to).boundingBox();
  await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
  await page.mouse.down();
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 5 });
  await page.mouse.up();
}

/** Moves the keyboard cursor to `target` with arrow keys only. */
async function cursorTo(page, target) {
  const flipped = await page.locator('.board.flipped').count() > 0;
  const place = (sq) => {
    const f = sq.charCodeAt(0) - 97;
    const r = Number(sq.slice(1)) - 1;
    return flipped ? { row: r, col: 7 - f } : { row: 7 - r, col: f };
  };
  const to = place(target);
  // The arrows step between playing squares: rows first, then along the row.
  for (let i = 0; i < 30; i += 1) {
    const current = await page.evaluate(() => document.activeElement?.dataset?.square);
    check(current, 'the keyboard focus is on a board square');
    if (current === target) return;
    const from = place(current);
    let key = to.col > from.col ? 'ArrowRight' : 'ArrowLeft';
    if (to.row !== from.row) key = to.row > from.row ? 'ArrowDown' : 'ArrowUp';
    await page.keyboard.press(key);
  }
  const now = await page.evaluate(() => document.activeElement?.dataset?.square);
  check(now === target, `the cursor reached ${target} (at ${now})`);
}

try {
  const host = await newPage('host', { width: 1200, height: 900 });
  const guest = await newPage('guest', { width: 390, height: 844 }); // a phone
  const watcher = await newPage('watcher', { width: 1000, height: 800 });

  step('board geometry follows each rule set (server/RULES.md)');
  await host.goto('/');
  const geometry = await host.evaluate(async () => {
    const board = await import('/assets/board.js');
    const at = (ruleSet, sq) => board.squareNumber(ruleSet, sq.charCodeAt(0) - 97, Number(sq[1]) - 1);
    return {
      american: [at('american', 'g1'), at('american', 'a1'), at('american', 'b8')],
      spanish: [at('spanish', 'h1'), at('spanish', 'b1'), at('spanish', 'a8')],
      italian: [at('italian', 'a8'), at('italian', 'h1'), at('italian', 'a1')],
      thai: [at('thai', 'b8'), at('thai', 'g1')],
      russian: [at('russian', 'a1')],
    };
  });
  check(JSON.stringify(geometry) === JSON.stringify({
    american: [1, 4, 32], spanish: [1, 4, 32], italian: [1, 32, null], thai: [1, 32], russian: [null],
  }), `square numbers: ${JSON.stringify(geometry)}`);

  step('host creates an invite-only American lobby');
  await host.goto('/');
  await host.locator('#create-form').waitFor();
  await host.selectOption('#rule-set', 'american');
  await host.check('input[name=series_length][value="1"]');
  await host.check('#invite-only');
  await host.screenshot({ path: join(artifacts, 'home.png') });
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  const link = await host.inputValue('#invite-link');
  check(/\/r\/[2-9A-Z]{8}\?invite=/.test(link), `invite link looks right: ${link}`);
  const code = link.match(/\/r\/([2-9A-Z]{8})/)[1];
  check(await host.locator('#invite-text-open').isHidden(), 'the code alone is not offered for an invite-only lobby');
  check(new URL(host.url()).pathname === `/r/${code}`, 'the address names the lobby');
  await waitStatus(host, /Waiting for an opponent/);
  await host.screenshot({ path: join(artifacts, 'lobby.png') });

  step('guest opens the invite link and joins; round 1 starts');
  await guest.goto(new URL(link).pathname + new URL(link).search);
  await guest.locator('#preview').waitFor();
  check(/American checkers/.test(await guest.textContent('#preview-details')), 'the preview names the rule set');
  await guest.click('#preview-join');
  await waitStatus(host, /^Your turn/);
  await waitStatus(guest, /to move/);
  check(await host.locator('#invite-panel').isHidden(), 'the invite panel goes once the lobby is full');
  check(await guest.locator('.board.flipped').count() === 1, 'the board is turned for Light');
  check(await host.locator('.board.flipped').count() === 0, 'the board is not turned for Dark');
  check(
    (await square(host, 'c3').getAttribute('aria-label')).startsWith('c3, black man'),
    'squares have labels like "c3, black man" (Black moves first in American checkers)',
  );

  step('a third person opens the link of the full lobby and is watching at once (item 7)');
  await watcher.goto(new URL(link).pathname + new URL(link).search);
  await watcher.locator('#room').waitFor();
  check(await watcher.locator('#home').isHidden(), 'no home forms for the spectator');
  await watcher.waitForFunction(() => /watching/.test(document.getElementById('room-meta').textContent));
  await host.waitForFunction(() => /1 watching/.test(document.getElementById('room-meta').textContent));

  step('moves by click, a mandatory capture, and a capture by drag');
  await clickPath(host, ['c3', 'd4']);
  await waitPiece(guest, 'd4', 'dark');
  await waitPiece(watcher, 'd4', 'dark');
  check((await markedSquares(watcher, 'last-move')).join() === 'c3,d4', 'the last move is highlighted');
  await clickPath(guest, ['f6', 'e5']);
  await waitStatus(host, /must capture/);
  check((await markedSquares(host, 'must-capture')).join() === 'd4', 'only the capturing piece is marked');
  await square(host, 'd4').click();
  check((await markedSquares(host, 'capture')).join() === 'e5', 'the piece to be taken is marked');
  check((await markedSquares(host, 'target')).join() === 'f6', 'the landing square is marked');
  await square(host, 'f6').click();
  await waitEmpty(guest, 'e5');
  await waitPiece(guest, 'f6', 'dark');
  await waitStatus(guest, /must capture/);
  check((await markedSquares(guest, 'must-capture')).join() === 'e7,g7', 'both capturing pieces are marked');
  await drag(guest, 'g7', 'e5');
  await waitPiece(host, 'e5', 'light');
  await waitEmpty(host, 'f6');
  await waitPiece(watcher, 'e5', 'light');
  const moves = await host.$$eval('#moves li', (items) => items.map((i) => i.textContent.replace(/\s+/g, ' ')));
  check(moves.join(' | ') === '11-15 22-18 | 15x22 25x18', `the move list is in notation: ${moves.join(' | ')}`);
  await host.screenshot({ path: join(artifacts, 'game.png') });
  await guest.screenshot({ path: join(artifacts, 'game-phone.png') });

  step('host offers a draw on their turn; guest accepts; the break');
  await host.click('#offer-draw');
  await guest.locator('#accept-draw').waitFor();
  await guest.click('#accept-draw');
  await waitStatus(host, /Round 1 drawn/);
  await waitStatus(watcher, /Round 1 drawn/);
  await host.click('#next-round').catch(() => {});
  await guest.click('#next-round').catch(() => {});

  step('round 2: guest plays Dark by keyboard only');
  await waitStatus(guest, /^Your turn/);
  check(await guest.locator('.board.flipped').count() === 0, 'the guest is Dark now');
  await guest.locator('.square[tabindex="0"]').focus();
  await cursorTo(guest, 'c3');
  await guest.keyboard.press('Enter');
  check((await markedSquares(guest, 'target')).join() === 'b4,d4', 'c3 is selected by keyboard');
  await guest.keyboard.press('Escape');
  check((await markedSquares(guest, 'target')).length === 0, 'Escape clears the selection');
  await guest.keyboard.press('Enter');
  await cursorTo(guest, 'd4');
  await guest.keyboard.press(' ');
  await waitPiece(host, 'd4', 'dark');
  await waitPiece(watcher, 'd4', 'dark');

  step('the host reloads mid-game and gets the seat back');
  await host.reload();
  await waitStatus(host, /^Your turn/);
  check(await host.locator('.board.flipped').count() === 1, 'the host is Light after the reload');
  check(/you/.test(await host.textContent('#seat-bottom')), 'the host still holds the seat');
  await clickPath(host, ['f6', 'e5']);
  await waitStatus(guest, /must capture/);

  step('guest offers a draw, host accepts: the series is drawn');
  await guest.click('#offer-draw');
  await host.locator('#accept-draw').waitFor();
  await host.click('#accept-draw');
  await waitStatus(host, /Series drawn/);
  await waitStatus(watcher, /Series drawn/);

  step('rematch swaps the seats');
  const guestSeatBefore = await guest.getAttribute('#seat-bottom', 'data-seat');
  await host.click('#rematch');
  await guest.locator('#rematch-offer-text', { hasText: 'wants a rematch' }).waitFor();
  await guest.click('#accept-rematch');
  await waitStatus(guest, /^Your turn/);
  const guestSeatAfter = await guest.getAttribute('#seat-bottom', 'data-seat');
  check(guestSeatBefore === '1' && guestSeatAfter === '0', `seats swapped (${guestSeatBefore} -> ${guestSeatAfter})`);
  await waitStatus(host, /to move/);

  step('the page speaks protocol 2: a snapshot on entering, then events, never a v1 state, and no resync');
  for (const [who, page] of [['host', host], ['guest', guest]]) {
    const types = Object.fromEntries(page.frameTypes);
    check(types.snapshot > 0 && types.moved > 0 && types.changed > 0 && !types.state,
      `${who} got snapshot, moved and changed frames and no state: ${JSON.stringify(types)}`);
    // Nothing was missed on loopback, so every event applied to the room held.
    const sent = Object.fromEntries(page.sentTypes);
    check(!sent.resync, `${who} never needed a resync: ${JSON.stringify(sent)}`);
  }

  step('the host ends the match; the PDN holds the games');
  await host.click('#end-match');
  await waitStatus(host, /host ended the match/);
  await waitStatus(guest, /host ended the match/);
  const href = await host.getAttribute('#download-pdn', 'href');
  const invite = new URL(link).searchParams.get('invite');
  check(href === `/r/${code}/games.pdn?invite=${invite}`, `PDN link: ${href}`);
  const hidden = await host.request.get(`/r/${code}/games.pdn`);
  check(hidden.status() === 404, 'without the invite, the games are not there');
  const pdn = await host.request.get(href);
  check(pdn.ok(), 'the PDN downloads');
  const text = await pdn.text();
  check((text.match(/\[Event /g) ?? []).length === 3, `three games in the PDN:\n${text}`);
  check(text.includes('15x22'), 'the PDN has the moves');

  step('the spectator leaves');
  await watcher.click('#leave');
  await watcher.locator('#home').waitFor();
  check(new URL(watcher.url()).pathname === '/', 'back on the home page');

  step('the code alone (typed in lower case) does not open an invite-only lobby, nor show it exists');
  await watcher.fill('#join-code', ` ${code.toLowerCase()} `);
  await watcher.click('#watch-button');
  await watcher.locator('#notice', { hasText: 'No lobby has that code' }).waitFor();
  check(await watcher.locator('#room').isHidden(), 'still on the home page');

  step('solo: a practice game against the Tamer, one move, the reply, undo');
  const solo = await newPage('solo', { width: 1100, height: 900 });
  const soloSquare = (name) => solo.locator(`#solo .square[data-square="${name}"]`);
  const soloMoves = () => solo.evaluate(() => [...document.querySelectorAll('#solo-moves li')]
    .flatMap((li) => li.textContent.trim().split(/\s+/)).filter(Boolean).length);
  const waitSoloStatus = (pattern) => solo.waitForFunction(
    ([source, flags]) => new RegExp(source, flags).test(document.getElementById('solo-status').textContent),
    [pattern.source, pattern.flags],
  );
  await solo.goto('/');
  await solo.locator('#solo-form').waitFor();
  check(await solo.locator('#solo-ranked').isDisabled(), 'a guest cannot tick "Ranked"');
  check(/undo turns a ranked game into practice/i.test(await solo.textContent('#solo-ranked-hint')), 'the hint says what undo does');
  await solo.selectOption('#solo-rule-set', 'american');
  await solo.selectOption('#solo-level', 'tamer');
  await solo.click('#solo-start');
  await solo.locator('#solo').waitFor();
  await waitSoloStatus(/^Your turn/);
  check((await solo.textContent('#solo-badge')) === 'Practice', 'the game is practice');
  check(await solo.locator('.board').count() === 1, 'only the solo board is in the page');
  check(await solo.locator('#solo .board.flipped').count() === 0, 'Dark (the player) is at the bottom');
  await soloSquare('c3').click();
  await soloSquare('d4').click();
  await solo.waitForFunction(() => [...document.querySelectorAll('#solo-moves li')]
    .flatMap((li) => li.textContent.trim().split(/\s+/)).filter(Boolean).length === 2);
  await waitSoloStatus(/^Your turn/);
  await solo.locator('#solo-undo:not([disabled])').waitFor();
  await solo.click('#solo-undo');
  await solo.waitForFunction(() => document.querySelectorAll('#solo-moves li').length === 0);
  await waitPiece(solo, 'c3', 'dark');
  check(await soloMoves() === 0, 'undo took back both moves');
  await solo.screenshot({ path: join(artifacts, 'solo.png') });

  step('solo: after a reload the page connects naming the game it showed (for a load balancer)');
  const reconnected = solo.waitForEvent('websocket');
  await solo.reload();
  const socketUrl = (await reconnected).url();
  check(/\/ws\?room=S[2-9A-HJ-NP-Z]{8}$/.test(socketUrl), `the socket names the solo game: ${socketUrl}`);
  // And comes back to it, its address naming it (issue 35 item 5); then home.
  await solo.locator('#solo').waitFor();
  await solo.click('#solo-home');
  await solo.locator('#home').waitFor();

  step('solo: a same-device game, one move, Light resigns; the device record counts it');
  await solo.click('#same-device-start');
  await waitSoloStatus(/^Black to move/);
  await soloSquare('c3').click();
  await soloSquare('d4').click();
  await waitSoloStatus(/^White to move/);
  check(await soloMoves() === 1, 'one move in the list');
  await solo.click('#solo-resign');
  await waitSoloStatus(/Black won \(resignation\)/);
  check(/1 game played · Dark won 1/.test(await solo.textContent('#solo-record')), 'the device record counts the game');

  step('the leaderboards render (empty)');
  await solo.click('#open-leaderboards');
  await solo.locator('#leaderboards-title', { hasText: 'Leaderboards' }).waitFor();
  await solo.locator('#leaderboard-empty', { hasText: 'No ranked games in American checkers yet' }).waitFor();
  check((await solo.textContent('#leaderboard-page')) === 'Page 1 of 1', 'one page');
  check(await solo.locator('#solo').isHidden(), 'the solo view is closed');
  await solo.click('#leaderboard-home');
  await solo.locator('#home').waitFor();
  check(/1 game played/.test(await solo.textContent('#device-record')), 'the home page shows the device record');
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
console.log('all browser scenarios passed');
