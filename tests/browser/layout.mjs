// Issue 35's board and theme checks, run by tests/tests/e2e/browser.rs:
//
//   node tests/browser/layout.mjs <base-url> <artifact-dir>
//
// A host at 1280×800 whose system asks for dark colours, and a guest on a
// 390×844 touch phone who chose dark mode on the page: axe-core in dark mode
// on the home, lobby, game (a move list with its current move), solo and
// leaderboard screens (ux.mjs scans them light); the arrow keys stepping on
// playing squares only, and the board's live region saying what a selection
// allows and the move made; coordinates and square numbers in corners of
// their own; a touch drag drawing the piece above the fingertip.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DESKTOP, PHONE, check, checkAxe, launch, newPage, square, step, waitPiece, waitStatus, waitText,
} from './lib.mjs';

const [base, artifacts] = process.argv.slice(2);
if (!base || !artifacts) {
  console.error('usage: node layout.mjs <base-url> <artifact-dir>');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const failures = [];
const browser = await launch();

/**
 * A context of this script's own (dark, or a touch phone). With WEB_DIR set
 * its assets come from disk, as lib.mjs does for the contexts it makes.
 */
async function context(options) {
  const made = await browser.newContext({ baseURL: base, ...options });
  if (process.env.WEB_DIR) {
    const types = { js: 'text/javascript', css: 'text/css', svg: 'image/svg+xml', png: 'image/png', html: 'text/html' };
    await made.route(`${base}/**`, (route) => {
      const url = new URL(route.request().url());
      const page = (url.pathname === '/' || url.pathname.startsWith('/r/'))
        && (route.request().headers().accept ?? '').includes('text/html');
      const file = url.pathname.startsWith('/assets/') ? url.pathname.slice('/assets/'.length) : page ? 'index.html' : null;
      if (!file) return route.continue();
      return route.fulfill({ body: readFileSync(join(process.env.WEB_DIR, file)), contentType: types[file.split('.').pop()] });
    });
  }
  return made;
}

/** The page's background is dark: a theme really is in force. */
async function checkDark(page, where) {
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor
    || getComputedStyle(document.documentElement).backgroundColor);
  const rootBg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  const [r, g, b] = (rootBg.match(/\d+/g) ?? bg.match(/\d+/g)).map(Number);
  check(r + g + b < 150, `${where}: the page is dark (${rootBg})`);
}

const focused = (page) => page.evaluate(() => {
  const cell = document.activeElement;
  return cell?.dataset?.square ? { square: cell.dataset.square, playing: cell.classList.contains('dark-square') } : null;
});

/** Where a square is drawn: its row and column on the screen, from its box. */
async function drawnAt(page, name) {
  const box = await square(page, name).boundingBox();
  const board = await page.locator('.board:visible').boundingBox();
  return { row: Math.round((box.y - board.y) / box.height), col: Math.round((box.x - board.x) / box.width) };
}

/** Steps the cursor to `target` with the arrow keys, checking every square it lands on. */
async function arrowTo(page, target) {
  const goal = await drawnAt(page, target);
  for (let i = 0; i < 30; i += 1) {
    const now = await focused(page);
    check(now?.playing, `the arrow keys land on playing squares only (at ${JSON.stringify(now)})`);
    if (now.square === target) return;
    const at = await drawnAt(page, now.square);
    let key = at.col < goal.col ? 'ArrowRight' : 'ArrowLeft';
    if (at.row !== goal.row) key = at.row < goal.row ? 'ArrowDown' : 'ArrowUp';
    await page.keyboard.press(key);
  }
  check(false, `the cursor reached ${target} (at ${(await focused(page))?.square})`);
}

/** Coordinates and square numbers: all there, none overlapping another, each in the right corner. */
async function checkLabels(page, where) {
  const found = await page.evaluate(() => {
    const board = [...document.querySelectorAll('.board')].find((b) => b.offsetParent !== null);
    const box = (e) => {
      const r = e.getBoundingClientRect();
      return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
    };
    const labels = [];
    for (const c of board.querySelectorAll('.coordinate')) labels.push({ kind: c.classList.contains('rank') ? 'rank' : 'file', text: c.textContent, box: box(c) });
    for (const n of board.querySelectorAll('.square .number')) labels.push({ kind: 'number', text: n.textContent, box: box(n), cell: box(n.closest('.square')) });
    const squares = [...board.querySelectorAll('.square')].map(box);
    return { labels, squares };
  });
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const ranks = found.labels.filter((l) => l.kind === 'rank');
  const files = found.labels.filter((l) => l.kind === 'file');
  const numbers = found.labels.filter((l) => l.kind === 'number');
  check(ranks.length === 8 && files.length === 8 && numbers.length === 32, `${where}: 8 ranks, 8 files, 32 numbers`);
  for (let i = 0; i < found.labels.length; i += 1) {
    for (let j = i + 1; j < found.labels.length; j += 1) {
      const [a, b] = [found.labels[i], found.labels[j]];
      check(!overlap(a.box, b.box), `${where}: ${a.kind} ${a.text} and ${b.kind} ${b.text} do not overlap`);
    }
  }
  // Which quarter of its square a label sits in.
  const corner = (label) => {
    const x = (label.box.left + label.box.right) / 2;
    const y = (label.box.top + label.box.bottom) / 2;
    const cell = label.cell ?? found.squares.find((s) => x >= s.left && x < s.right && y >= s.top && y < s.bottom);
    return `${y < (cell.top + cell.bottom) / 2 ? 'top' : 'bottom'}-${x < (cell.left + cell.right) / 2 ? 'left' : 'right'}`;
  };
  const corners = (list) => [...new Set(list.map(corner))].join();
  check(corners(numbers) === 'top-right', `${where}: square numbers top right (${corners(numbers)})`);
  check(corners(ranks) === 'bottom-left', `${where}: ranks bottom left (${corners(ranks)})`);
  check(corners(files) === 'bottom-right', `${where}: files bottom right (${corners(files)})`);
}

try {
  const hostContext = await context({ viewport: DESKTOP, colorScheme: 'dark' });
  const host = await newPage(browser, base, failures, 'host', DESKTOP, hostContext);
  const phoneContext = await context({ viewport: PHONE, hasTouch: true, isMobile: true });
  await phoneContext.addInitScript(() => localStorage.setItem('jumpgate.theme', 'dark'));
  const guest = await newPage(browser, base, failures, 'guest', PHONE, phoneContext);

  step('home in dark mode: the system\'s choice (desktop) and the page\'s (phone); axe');
  await host.goto('/');
  await host.locator('#create-form').waitFor();
  await waitText(host, 'identity', /You are Guest-/);
  await checkDark(host, 'home (desktop, system dark)');
  await checkAxe(host, 'home, dark (desktop)');
  await guest.goto('/');
  await waitText(guest, 'identity', /You are Guest-/);
  check((await guest.evaluate(() => document.documentElement.dataset.theme)) === 'dark', 'the phone\'s page is in its dark theme');
  await checkDark(guest, 'home (phone, chosen dark)');
  await checkAxe(guest, 'home, dark (phone)');

  step('a lobby waiting for its friend, dark; its board\'s labels each in a corner of their own (item 17)');
  await host.selectOption('#rule-set', 'american');
  await host.check('input[name=series_length][value="1"]');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  await checkAxe(host, 'lobby waiting, dark (desktop)');
  await checkLabels(host, 'lobby board (desktop)');
  const link = new URL(await host.inputValue('#invite-link'));

  step('the friend joins on the phone; the game starts');
  await guest.goto(link.pathname + link.search);
  await guest.click('#preview-join');
  await waitStatus(host, /^Your turn/);
  await waitStatus(guest, /to move/);
  await checkLabels(guest, 'game board (phone, turned round)');

  step('keyboard: the arrow keys step on playing squares only; a selection and the move are announced (item 14)');
  await host.locator('.board .square[tabindex="0"]').focus();
  check((await focused(host))?.playing, `the board's first stop is a playing square (${JSON.stringify(await focused(host))})`);
  const walk = ['ArrowRight', 'ArrowRight', 'ArrowUp', 'ArrowUp', 'ArrowUp', 'ArrowLeft', 'ArrowLeft', 'ArrowLeft',
    'ArrowUp', 'ArrowUp', 'ArrowRight', 'ArrowUp', 'ArrowUp', 'ArrowUp', 'ArrowRight', 'ArrowRight', 'ArrowRight',
    'ArrowRight', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowDown'];
  const visited = new Set();
  for (const key of walk) {
    await host.keyboard.press(key);
    const now = await focused(host);
    check(now?.playing, `${key} landed on a playing square (${JSON.stringify(now)})`);
    visited.add(now.square);
  }
  check(visited.size >= 10, `the walk went round the board (${[...visited].join(' ')})`);
  // A square not played on, pointed at, is left for a playing one by the first arrow.
  await square(host, 'a2').click();
  await host.locator('.board .square[tabindex="0"]').focus();
  await host.keyboard.press('ArrowRight');
  check((await focused(host))?.square === 'b2', `from a2 the right arrow goes to b2 (${(await focused(host))?.square})`);
  await arrowTo(host, 'c3');
  await host.keyboard.press('Enter');
  const announce = host.locator('.board .board-announce');
  check(await announce.getAttribute('aria-live') === 'polite', 'the board has a polite live region');
  await host.waitForFunction(() => /^c3 selected, 2 moves: b4, d4$/.test(document.querySelector('.board .board-announce')?.textContent ?? ''));
  await arrowTo(host, 'd4');
  await host.keyboard.press('Enter');
  // Said once the board shows the move played, not when it is sent.
  await host.waitForFunction(() => document.querySelector('.board .board-announce')?.textContent === 'moved c3 to d4');
  await waitPiece(guest, 'd4', 'dark');

  step('a touch drag on the phone lifts the piece above the fingertip; it lands under the finger (item 17)');
  await waitStatus(guest, /^Your turn/);
  const centre = async (name) => {
    const b = await square(guest, name).boundingBox();
    return { x: b.x + b.width / 2, y: b.y + b.height / 2, size: b.height };
  };
  const from = await centre('f6');
  const to = await centre('e5');
  const touch = await guest.context().newCDPSession(guest);
  const finger = (type, at) => touch.send('Input.dispatchTouchEvent', {
    type, touchPoints: type === 'touchEnd' ? [] : [{ x: at.x, y: at.y, id: 1 }],
  });
  await finger('touchStart', from);
  const steps = 6;
  for (let i = 1; i <= steps; i += 1) {
    await finger('touchMove', { x: from.x + ((to.x - from.x) * i) / steps, y: from.y + ((to.y - from.y) * i) / steps });
  }
  // Touch moves reach the page with its next frames.
  await guest.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  const ghost = await guest.locator('.piece.ghost').boundingBox();
  check(ghost, 'the dragged piece is drawn over the page');
  const ghostY = ghost.y + ghost.height / 2;
  check(ghostY < to.y - to.size / 2, `the piece is above the fingertip: its centre at y ${ghostY.toFixed(1)}, the finger at ${to.y.toFixed(1)}`);
  check(Math.abs(ghost.x + ghost.width / 2 - to.x) < 2, `and level with it across (${JSON.stringify(ghost)} vs ${JSON.stringify(to)})`);
  check((await guest.$$eval('.square.drag-over', (c) => c.map((e) => e.dataset.square))).join() === 'e5',
    'the square under the finger is marked');
  await finger('touchEnd', to);
  await waitPiece(host, 'e5', 'light');
  check(await guest.locator('.piece.ghost').count() === 0, 'the dragged piece is put down');
  check(await guest.locator('.square.drag-over').count() === 0, 'the mark under the finger goes with it');

  step('a mouse drag keeps the piece under the pointer');
  await waitStatus(host, /must capture/);
  const a = await square(host, 'd4').boundingBox();
  const b = await square(host, 'f6').boundingBox();
  await host.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
  await host.mouse.down();
  const mid = { x: (a.x + b.x + b.width) / 2, y: (a.y + b.y + b.height) / 2 };
  await host.mouse.move(mid.x, mid.y, { steps: 4 });
  const held = await host.locator('.piece.ghost').boundingBox();
  check(held && Math.abs(held.y + held.height / 2 - mid.y) < 2, 'the piece is centred on the mouse pointer');
  check(await host.locator('.square.drag-over').count() === 0, 'no square is marked under a mouse pointer');
  await host.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 2 });
  await host.mouse.up();
  await waitPiece(guest, 'f6', 'dark');

  step('the game in dark mode, its move list showing the current move (item 12); axe; the phone screenshot');
  await waitStatus(guest, /^Your turn/);
  check(await host.locator('#moves button.move[aria-current]').count() === 1, 'the move list marks the current move');
  await checkAxe(host, 'game, dark (desktop)');
  check(await guest.locator('#moves button.move[aria-current]').count() === 1, 'the phone\'s move list marks it too');
  await checkAxe(guest, 'game, dark (phone)');
  await guest.screenshot({ path: join(artifacts, 'phone-game.png'), fullPage: true });

  step('solo against the computer and the leaderboards, dark; axe');
  const solo = await newPage(browser, base, failures, 'solo', PHONE,
    await context({ viewport: PHONE, colorScheme: 'dark' }));
  await solo.goto('/');
  await solo.locator('#solo-form').waitFor();
  await solo.click('#solo-start');
  await waitText(solo, 'solo-status', /to move|Your turn/);
  await checkDark(solo, 'solo');
  await checkLabels(solo, 'solo board (phone)');
  await checkAxe(solo, 'solo, dark (phone)');
  await solo.click('#solo-home');
  await solo.click('#open-leaderboards');
  await solo.locator('#leaderboard-empty').waitFor();
  await checkAxe(solo, 'leaderboards, dark (phone)');
} catch (error) {
  failures.push(error.stack ?? String(error));
  for (const [i, context] of browser.contexts().entries()) {
    for (const [j, page] of context.pages().entries()) {
      await page.screenshot({ path: join(artifacts, `failure-${i}-${j}.png`) }).catch(() => {});
    }
  }
} finally {
  await browser.close();
}

if (failures.length > 0) {
  console.error(failures.join('\n'));
  process.exit(1);
}
console.log('all issue 35 layout checks passed');
