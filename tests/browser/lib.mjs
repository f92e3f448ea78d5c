// Shared helpers of the browser scenarios: the browser, pages that record
// their errors and dialogs, board helpers, the layout checks (board and both
// clocks inside the window; the board never moves during a drag) and axe-core.
//
// With WEB_DIR=server/web in the environment the pages get the client's
// files from disk rather than from the server's embedded copy, so a change
// to the client shows without rebuilding the server (a convenience when
// working on the client; the tests under `cargo test` never set it).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const TIMEOUT = 15_000;
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

export function step(name) {
  console.log(`- ${name}`);
}

export async function launch() {
  // Playwright gives every launch() a fresh temporary profile (user data dir).
  return chromium.launch({
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
      '--autoplay-policy=no-user-gesture-required',
      // A page fulfilled from WEB_DIR has no address of its own; let it reach the loopback server.
      ...(process.env.WEB_DIR ? ['--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests'] : []),
    ],
  });
}

/** Serves the client from WEB_DIR, when set (see the top of this file). */
async function serveFromDisk(context, base) {
  const dir = process.env.WEB_DIR;
  if (!dir) return;
  const types = { js: 'text/javascript', css: 'text/css', svg: 'image/svg+xml', png: 'image/png', html: 'text/html' };
  await context.route(`${base}/**`, async (route) => {
    const url = new URL(route.request().url());
    const wantsJson = (route.request().headers().accept ?? '').includes('application/json') || url.searchParams.get('format') === 'json';
    let file = null;
    if (url.pathname.startsWith('/assets/')) file = url.pathname.slice('/assets/'.length);
    else if ((url.pathname === '/' || /^\/r\/[^/]+\/?$/.test(url.pathname)) && !wantsJson) file = 'index.html';
    if (!file) return route.continue();
    const body = readFileSync(join(dir, file));
    return route.fulfill({ status: 200, body, contentType: types[file.split('.').pop()] ?? 'application/octet-stream' });
  });
}

/**
 * A page in a context of its own (its own storage: another person), or in
 * `context` (the same person in another tab). Errors are collected in
 * `failures`; dialogs are accepted unless `page.dismissNext` is set, and
 * their messages kept in `page.dialogs`.
 */
export async function newPage(browser, base, failures, name, viewport, context = null) {
  const ctx = context ?? await browser.newContext({ viewport, baseURL: base });
  if (!context) {
    await serveFromDisk(ctx, base);
    // Counts the tones played (a tone is one oscillator).
    await ctx.addInitScript(() => {
      window.__tones = 0;
      const original = window.AudioContext?.prototype.createOscillator;
      if (original) {
        window.AudioContext.prototype.createOscillator = function createOscillator() {
          window.__tones += 1;
          return original.call(this);
        };
      }
    });
  }
  const page = await ctx.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.dialogs = [];
  page.dismissNext = false;
  page.on('pageerror', (error) => failures.push(`${name}: page error: ${error.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') failures.push(`${name}: console error: ${m.text()}`);
  });
  page.on('dialog', (dialog) => {
    page.dialogs.push(dialog.message());
    if (page.dismissNext) {
      page.dismissNext = false;
      dialog.dismiss();
    } else {
      dialog.accept();
    }
  });
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(base) && !url.startsWith(base.replace(/^http/, 'ws'))) {
      failures.push(`${name}: request to another site: ${url}`);
    }
  });
  return page;
}

export const square = (page, name, scope = '') => page.locator(`${scope} .square[data-square="${name}"]`.trim());

export async function waitPiece(page, name, color) {
  await page.locator(`.square[data-square="${name}"] .piece.${color}`).waitFor();
}

export async function waitEmpty(page, name) {
  await page.waitForFunction((sq) => !document.querySelector(`.square[data-square="${sq}"] .piece`), name);
}

export async function waitText(page, id, pattern) {
  await page.waitForFunction(
    ([element, source, flags]) => new RegExp(source, flags).test(document.getElementById(element)?.textContent ?? ''),
    [id, pattern.source, pattern.flags],
  );
}

export const waitStatus = (page, pattern) => waitText(page, 'status', pattern);

export async function clickPath(page, path) {
  for (const name of path) await square(page, name).click();
}

export async function markedSquares(page, cls) {
  return page.$$eval(`.square.${cls}`, (cells) => cells.map((c) => c.dataset.square).sort());
}

async function centre(locator) {
  const box = await locator.boundingBox();
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/**
 * Drags from one square to another. `midway` runs with the button held,
 * the pointer halfway; it gets the board's box as it was when the drag began.
 */
export async function drag(page, from, to, midway = null) {
  const board = page.locator('.board:visible');
  const before = await board.boundingBox();
  const a = await centre(square(page, from));
  const b = await centre(square(page, to));
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 4 });
  if (midway) await midway(before);
  await page.mouse.move(b.x, b.y, { steps: 4 });
  const after = await board.boundingBox();
  check(
    Math.abs(after.x - before.x) < 0.5 && Math.abs(after.y - before.y) < 0.5 && Math.abs(after.width - before.width) < 0.5,
    `the board did not move during the drag (${JSON.stringify(before)} -> ${JSON.stringify(after)})`,
  );
  await page.mouse.up();
}

/** The board and both seats' clocks lie inside the window (page scrolled to the top). */
export async function checkFits(page, where) {
  const boxes = await page.evaluate(() => {
    window.scrollTo(0, 0);
    const rect = (element) => {
      const r = element.getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, left: r.left, right: r.right };
    };
    const board = [...document.querySelectorAll('.board')].find((b) => b.offsetParent !== null);
    const clocks = [...document.querySelectorAll('.seat .clock')].filter((c) => c.offsetParent !== null);
    return {
      width: window.innerWidth,
      height: window.innerHeight,
      board: board ? rect(board) : null,
      clocks: clocks.map(rect),
    };
  });
  check(boxes.board, `${where}: a board is shown`);
  check(boxes.clocks.length === 2, `${where}: both clocks are shown (${boxes.clocks.length})`);
  for (const [what, r] of [['board', boxes.board], ...boxes.clocks.map((c, i) => [`clock ${i + 1}`, c])]) {
    check(
      r.top >= 0 && r.left >= 0 && r.bottom <= boxes.height + 0.5 && r.right <= boxes.width + 0.5,
      `${where}: the ${what} is inside the ${boxes.width}×${boxes.height} window (${JSON.stringify(r)})`,
    );
  }
}

/**
 * Runs axe-core on the page as it is; fails on serious or critical
 * violations, naming them.
 */
export async function checkAxe(page, where) {
  const loaded = await page.evaluate(() => typeof window.axe !== 'undefined');
  if (!loaded) await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
  check(violations.length === 0, `axe on ${where}:\n  ${violations.join('\n  ')}`);
}
