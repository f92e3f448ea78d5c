// Issue 35's theme checks, run by tests/tests/e2e/browser.rs:
//
//   node tests/browser/layout.mjs <base-url> <artifact-dir>
//
// A host at 1280×800 whose system asks for dark colours, and a guest on a
// 390×844 touch phone who chose dark mode on the page: axe-core in dark mode
// on the home, lobby, game (a move list with its current move), solo and
// leaderboard screens (ux.mjs scans them light).
// Exits non-zero, with a message, on the first thing that goes wrong.

import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DESKTOP, PHONE, check, checkAxe, clickPath, launch, newPage, step, waitPiece, waitStatus, waitText,
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

  step('a lobby waiting for its friend, dark');
  await host.selectOption('#rule-set', 'american');
  await host.check('input[name=series_length][value="1"]');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  await checkAxe(host, 'lobby waiting, dark (desktop)');
  const link = new URL(await host.inputValue('#invite-link'));

  step('the friend joins on the phone; the game starts');
  await guest.goto(link.pathname + link.search);
  await guest.click('#preview-join');
  await waitStatus(host, /^Your turn/);
  await waitStatus(guest, /to move/);

  step('two moves, by clicks');
  await clickPath(host, ['c3', 'd4']);
  await waitStatus(guest, /^Your turn/);
  await clickPath(guest, ['f6', 'e5']);
  await waitStatus(host, /must capture/);
  await clickPath(host, ['d4', 'f6']);
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
