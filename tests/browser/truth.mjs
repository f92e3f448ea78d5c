// Issue 35: the web client tells the truth when things go wrong. Run by
// tests/tests/e2e/browser.rs:
//
//   node tests/browser/truth.mjs <memory-server-url> <artifact-dir>
//
// with REDIS_BASE and DISK_BASE in the environment: three servers, on the
// memory store, on Redis and on the embedded data directory. The script
// asks the test to stop and start them by printing `do ACTION STORE`
// (`kill`, `start` or `restart`; `memory`, `redis` or `disk`) and waiting
// for `done ACTION STORE` on its stdin.
//
// What it checks:
// - codes: a malformed one is answered without asking the server; an unknown
//   one and an invite-only one without its invite get the same words; a
//   lobby this page was in and the server lost says it is gone;
// - the invitation card says the host is away, and the wait after Join says
//   how long it can be;
// - memory store, restart under a live game: both pages say the game is
//   gone and offer a new lobby (same rules) or home, and nothing says
//   "Your turn" or "here" any more (restart-gone.png);
// - memory store, a move in flight when the server froze, then a restart:
//   the gone screen and no "not in a lobby" notice, the move not sent again;
//   while offline Offer draw and Resign are disabled and nothing goes;
// - Redis store, restart: the game resumes in place and a move goes through;
// - data directory, the server killed for several seconds: a banner covers
//   the board, a click on the board plays nothing, the clock stands still,
//   the opponent's presence is unknown (offline-overlay.png); once the
//   server is back the banner goes and the game goes on where it was; the
//   same when the server is frozen (SIGSTOP) with the socket left open;
//   offline, the keyboard plays nothing either (keys pressed, and keys given
//   to the board itself past the banner) and the game's buttons are disabled;
// - a solo game's address names it, and a reload comes back to it;
// - a solo game against the computer with the server killed: a banner over
//   its board, Undo and Resign disabled, and no move sent by click or key.
// With SAVE_SCREENSHOTS=1 the two screenshots are also copied to server/web/
// (screenshot-restart.png, screenshot-offline.png) for the README.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DESKTOP, PHONE, check, checkAxe, clickPath, launch, newPage, square, step, waitPiece, waitStatus, waitText } from './lib.mjs';

const [memoryBase, artifacts] = process.argv.slice(2);
const redisBase = process.env.REDIS_BASE;
const diskBase = process.env.DISK_BASE;
if (!memoryBase || !artifacts || !redisBase || !diskBase) {
  console.error('usage: REDIS_BASE=… DISK_BASE=… node truth.mjs <memory-server-url> <artifact-dir>');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const webDir = new URL('../../server/web/', import.meta.url).pathname;

/**
 * Saves a screenshot of the page as an artifact and, when asked to, one of
 * `part` (a selector; the whole page without it) for the README.
 */
async function screenshot(page, name, readmeName, part = null) {
  await page.screenshot({ path: join(artifacts, name) });
  if (process.env.SAVE_SCREENSHOTS !== '1') return;
  if (part) await page.locator(part).screenshot({ path: join(webDir, readmeName) });
  else copyFileSync(join(artifacts, name), join(webDir, readmeName));
}

const failures = [];
const browser = await launch();

/** Lines from the test on stdin, one at a time. */
const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

/** Has the test stop or start a server, and waits until it has. */
async function server(action, store) {
  console.log(`do ${action} ${store}`);
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no "done ${action} ${store}" from the test`)), 60_000);
  });
  try {
    const { value, done } = await Promise.race([stdin.next(), late]);
    check(!done && value === `done ${action} ${store}`, `the test did "${action} ${store}" (${value})`);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A page of its own (another person) on the server at `base`, with the room
 * messages it sends kept in `page.sent` (their types).
 */
async function open(name, base, viewport = DESKTOP) {
  const page = await newPage(browser, base, failures, name, viewport);
  page.sent = [];
  page.on('websocket', (socket) => {
    socket.on('framesent', ({ payload }) => {
      try {
        page.sent.push(JSON.parse(payload).type);
      } catch {
        // not ours to read
      }
    });
  });
  return page;
}

/** The notice's text once it shows `pattern`. */
async function noticeSays(page, pattern) {
  await waitText(page, 'notice', pattern);
  return page.textContent('#notice');
}

/**
 * Two people on `base` in a live one-game American lobby, the host (Dark)
 * having moved c3-d4: it is the guest's turn.
 */
async function livePair(base, tag) {
  const host = await open(`${tag} host`, base);
  const guest = await open(`${tag} guest`, base, PHONE);
  await host.goto('/');
  await waitText(host, 'identity', /You are/);
  await host.selectOption('#rule-set', 'american');
  await host.check('input[name=series_length][value="1"]');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  const code = (await host.inputValue('#invite-link')).match(/\/r\/([2-9A-Z]{8})/)[1];
  await guest.goto(`/r/${code}`);
  await guest.click('#preview-join');
  await waitStatus(host, /^Your turn/);
  await clickPath(host, ['c3', 'd4']);
  await waitPiece(guest, 'd4', 'dark');
  await waitStatus(guest, /^Your turn/);
  return { host, guest, code };
}

const seatText = (page, id) => page.textContent(`#${id}`);

/** From the board's first square (a1, Dark at the bottom), the keys that play c3-d4 (up and down keep to the column nearest). */
const KEYS_C3_D4 = ['ArrowUp', 'ArrowUp', 'Enter', 'ArrowUp', 'Enter'];

/**
 * Offline: the keys that would play c3-d4, pressed (the board is inert, so
 * they reach nothing) and then given to the board element itself, as if
 * they had got past the banner: the page must still play nothing.
 */
async function keysPlayNothing(page, holder) {
  for (const key of KEYS_C3_D4) await page.keyboard.press(key);
  for (const key of KEYS_C3_D4) await page.dispatchEvent(`${holder} .board`, 'keydown', { key });
  await sleep(300);
  check(!page.sent.includes('move'), `no move was sent by the keyboard while offline (${page.sent})`);
  check(await page.locator(`${holder} .square[data-square="c3"] .piece.dark`).count() === 1
    && await page.locator(`${holder} .square[data-square="d4"] .piece`).count() === 0, 'the piece on c3 did not move');
}

/** The notice's text if one shows, else ''. */
async function noticeText(page) {
  return await page.locator('#notice').isVisible() ? page.textContent('#notice') : '';
}

try {
  // -------------------------------------------------------------------------
  step('codes: a malformed one is caught before sending (item 15)');
  const visitor = await open('visitor', memoryBase);
  await visitor.goto('/');
  await waitText(visitor, 'identity', /You are/);
  visitor.sent.length = 0;
  await visitor.fill('#join-code', 'ab');
  await visitor.click('#join-button');
  const malformed = await noticeSays(visitor, /8 characters/);
  check(!visitor.sent.some((t) => ['lobby_info', 'join_lobby', 'watch'].includes(t)),
    `nothing was asked of the server for a 2-character code (${visitor.sent})`);
  await visitor.fill('#join-code', 'K7QP2DX0');
  await visitor.click('#watch-button');
  await noticeSays(visitor, /8 characters/);
  await visitor.goto('/r/AB');
  check(await noticeSays(visitor, /8 characters/) === malformed, 'an address with a malformed code gets the same words');

  step('codes: an unknown code and an invite-only lobby without its invite read the same');
  await visitor.fill('#join-code', '22222222');
  await visitor.click('#join-button');
  const unknown = await noticeSays(visitor, /No lobby has that code, or it needs its invite link/);
  const owner = await open('owner', memoryBase);
  await owner.goto('/');
  await waitText(owner, 'identity', /You are/);
  await owner.check('#invite-only');
  await owner.click('#create-button');
  await owner.locator('#invite-panel').waitFor();
  const privateLink = new URL(await owner.inputValue('#invite-link'));
  const privateCode = privateLink.pathname.split('/').pop();
  await visitor.evaluate(() => { document.getElementById('notice').hidden = true; });
  await visitor.fill('#join-code', privateCode);
  await visitor.click('#join-button');
  await visitor.locator('#notice').waitFor();
  check(await visitor.textContent('#notice') === unknown, 'an invite-only lobby without its invite is not told from no lobby');

  // -------------------------------------------------------------------------
  step('the invitation card says the host is away; the wait says how long (item 16)');
  await owner.close();
  const friend = await open('friend', memoryBase, PHONE);
  await friend.goto(privateLink.pathname + privateLink.search);
  await friend.locator('#preview').waitFor();
  await waitText(friend, 'preview-details', /away/);
  check(/away just now/.test(await friend.textContent('#preview-note')), 'the card\'s note says the host is away');
  check(/come back/.test(await friend.textContent('#preview-note')), 'and that the game starts when they come back');
  await friend.click('#preview-join');
  await waitStatus(friend, /Waiting for .* to come back/);
  const hint = await friend.textContent('#wait-hint');
  check(await friend.locator('#wait-hint').isVisible(), 'a hint is shown under the waiting status');
  check(/seat is kept/.test(hint) && /no clock runs/.test(hint) && /30 minutes/.test(hint), `the hint says how long: ${hint}`);
  await friend.close();
  await visitor.close();

  // -------------------------------------------------------------------------
  step('memory store: the server restarts under a live game; both pages say it is gone (item 1)');
  const lost = await livePair(memoryBase, 'memory');
  await server('restart', 'memory');
  for (const page of [lost.host, lost.guest]) {
    await page.locator('#gone').waitFor({ timeout: 30_000 });
    const text = await page.textContent('#gone-text');
    check(text.includes(lost.code) && /restarted without keeping/.test(text), `the page says the game is gone: ${text}`);
    check(await page.locator('#room').isHidden(), 'the board is gone');
    check(!/Your turn/.test(await page.title()), `the title no longer says "Your turn" (${await page.title()})`);
    check(await page.locator('#gone-new').isVisible() && await page.locator('#gone-home').isVisible(), 'a new lobby or home is offered');
    await waitText(page, 'connection-status', /^Online$/);
  }
  await screenshot(lost.guest, 'restart-gone.png', 'screenshot-restart.png');
  await checkAxe(lost.guest, 'the gone screen (light)');
  await lost.guest.click('#theme-toggle');
  await checkAxe(lost.guest, 'the gone screen (dark)');

  step('a lobby this page was in, asked for again, is "gone" (item 15)');
  await lost.guest.reload();
  const gone = await noticeSays(lost.guest, /gone/);
  check(gone !== unknown && gone !== malformed, `a lost lobby has words of its own: ${gone}`);
  check(await lost.guest.locator('#home').isVisible(), 'home, after the reload');

  step('the gone screen\'s "New lobby, same rules" opens a new lobby; "Home" goes home');
  await lost.host.click('#gone-new');
  await lost.host.locator('#invite-panel').waitFor();
  const fresh = (await lost.host.inputValue('#invite-link')).match(/\/r\/([2-9A-Z]{8})/)[1];
  check(fresh !== lost.code, 'a new code');
  const meta = await lost.host.textContent('#room-meta');
  check(/American checkers/.test(meta) && !/best of/i.test(meta), `with the same rules and series (one game): ${meta}`);
  await lost.host.click('#leave');
  await lost.host.locator('#home').waitFor();
  await lost.host.close();
  await lost.guest.close();

  step('memory store: a move in flight as the server freezes, then a restart: gone, and no "not in a lobby" (review 1, 2)');
  const flight = await livePair(memoryBase, 'in flight');
  await server('freeze', 'memory');
  flight.guest.sent.length = 0;
  await clickPath(flight.guest, ['f6', 'e5']);
  // Unanswered: the page finds the socket silent and shows the banner.
  await flight.guest.locator('#offline-overlay').waitFor({ timeout: 30_000 });
  check(flight.guest.sent.filter((t) => t === 'move').length === 1, `the move went out once before the drop (${flight.guest.sent})`);
  for (const id of ['offer-draw', 'resign']) {
    check(await flight.guest.locator(`#${id}`).isDisabled(), `#${id} is disabled while offline`);
    await flight.guest.locator(`#${id}`).click({ force: true });
  }
  await server('kill', 'memory');
  await server('start', 'memory');
  for (const page of [flight.guest, flight.host]) {
    await page.locator('#gone').waitFor({ timeout: 30_000 });
    await waitText(page, 'connection-status', /^Online$/);
  }
  await sleep(1_500);
  for (const page of [flight.guest, flight.host]) {
    const notice = await noticeText(page);
    check(!/not in a lobby/i.test(notice), `no "not in a lobby" notice over the gone screen (${notice})`);
    check(await page.locator('#gone').isVisible(), 'the gone screen stays');
  }
  const sentLater = flight.guest.sent;
  check(sentLater.filter((t) => t === 'move').length === 1, `the move in flight was not sent again to a server without the lobby (${sentLater})`);
  check(!sentLater.some((t) => ['offer_draw', 'resign'].includes(t)), `nothing pressed while offline was sent (${sentLater})`);
  await flight.host.close();
  await flight.guest.close();

  // -------------------------------------------------------------------------
  step('Redis store: the server restarts under a live game; it resumes in place (item 1)');
  const kept = await livePair(redisBase, 'redis');
  await server('restart', 'redis');
  await waitText(kept.guest, 'connection-status', /^Online$/);
  await waitText(kept.host, 'connection-status', /^Online$/);
  check(await kept.guest.locator('#gone').isHidden() && await kept.host.locator('#gone').isHidden(), 'nothing says the game is gone');
  await waitStatus(kept.guest, /^Your turn/);
  await waitPiece(kept.guest, 'd4', 'dark');
  await clickPath(kept.guest, ['f6', 'e5']);
  await waitPiece(kept.host, 'e5', 'light');
  await waitStatus(kept.host, /^Your turn/);
  await kept.host.close();
  await kept.guest.close();

  // -------------------------------------------------------------------------
  step('data directory: the server is down for several seconds; the board says so (item 2)');
  const down = await open('disk host', diskBase);
  const up = await open('disk guest', diskBase);
  await down.goto('/');
  await waitText(down, 'identity', /You are/);
  await down.selectOption('#rule-set', 'american');
  await down.check('input[name=series_length][value="1"]');
  await down.click('#create-button');
  await down.locator('#invite-panel').waitFor();
  const diskCode = (await down.inputValue('#invite-link')).match(/\/r\/([2-9A-Z]{8})/)[1];
  await up.goto(`/r/${diskCode}`);
  await up.click('#preview-join');
  await waitStatus(down, /^Your turn/);
  await waitText(down, 'seat-top', /here/);
  // The keyboard's way in, taken before the drop (review 14).
  await down.locator('#board-holder .square[tabindex="0"]').focus();
  await server('kill', 'disk');
  const killedAt = Date.now();
  await down.locator('#offline-overlay').waitFor();
  check(/reconnecting/i.test(await down.textContent('#offline-overlay')), 'the banner says the page is reconnecting');
  await waitText(down, 'seat-top', /unknown/);
  check(!/here/.test(await seatText(down, 'seat-top')), 'the opponent is no longer shown as here');
  check(!/Your turn/.test(await down.title()), `the title stops saying "Your turn" offline (${await down.title()})`);
  check(/once the connection is back/.test(await down.textContent('#status')), `the status says the move waits for the connection (${await down.textContent('#status')})`);
  const clock = () => down.textContent('#room .seat .clock.paused');
  const before = await clock();
  await sleep(2_200);
  check(await clock() === before, `the clock stands still on the page (${before}, then ${await clock()})`);
  down.sent.length = 0;
  await keysPlayNothing(down, '#board-holder');
  for (const id of ['offer-draw', 'resign']) {
    check(await down.locator(`#${id}`).isDisabled(), `#${id} is disabled while offline (review 2)`);
    await down.locator(`#${id}`).click({ force: true });
  }
  check(/stand still on this page/.test(await down.textContent('#offline-detail')), 'a live game\'s banner speaks of the clock');
  await square(down, 'c3').click({ force: true });
  await square(down, 'd4').click({ force: true });
  await sleep(300);
  check(await down.locator('.square[data-square="c3"] .piece.dark').count() === 1, 'the piece did not move');
  check(await down.locator('#offline-overlay').isVisible(), 'the banner is still up, saying no moves');
  await screenshot(down, 'offline-overlay.png', 'screenshot-offline.png', '#room .board-column');
  await checkAxe(down, 'the reconnecting banner (light)');
  await down.click('#theme-toggle', { force: true });
  await checkAxe(down, 'the reconnecting banner (dark)');
  await down.click('#theme-toggle', { force: true });
  await sleep(Math.max(0, 5_000 - (Date.now() - killedAt)));
  await server('start', 'disk');

  step('the server is back: the banner goes, the game goes on in place');
  await down.locator('#offline-overlay').waitFor({ state: 'hidden', timeout: 40_000 });
  await waitText(down, 'connection-status', /^Online$/);
  await waitText(down, 'seat-top', /here/);
  check(!down.sent.some((t) => ['move', 'offer_draw', 'resign'].includes(t)), `nothing tried while offline was sent later (${down.sent})`);
  check(!await noticeText(down), `no notice after reconnecting (${await noticeText(down)})`);
  await waitStatus(down, /^Your turn/);
  check(await down.locator('#room .seat .clock.running').count() === 1, 'the clock runs again');
  await clickPath(down, ['c3', 'd4']);
  await waitPiece(up, 'd4', 'dark');

  step('data directory: the server freezes (SIGSTOP) with the socket open; the page finds out and says so');
  await server('freeze', 'disk');
  // The page asks a silent server a question after a few seconds, and
  // counts an unanswered one as a dropped connection.
  await up.locator('#offline-overlay').waitFor({ timeout: 30_000 });
  await waitText(up, 'seat-top', /unknown/);
  check(await up.locator('#room .seat .clock.running').count() === 0, 'no clock counts down on the page');
  await server('thaw', 'disk');
  await up.locator('#offline-overlay').waitFor({ state: 'hidden', timeout: 40_000 });
  await waitStatus(up, /^Your turn/);
  await clickPath(up, ['f6', 'e5']);
  await waitPiece(down, 'e5', 'light');
  await down.close();
  await up.close();

  // -------------------------------------------------------------------------
  step('a solo game: its address names it; a reload comes back to it (item 5)');
  const player = await open('solo player', memoryBase);
  await player.goto('/');
  await waitText(player, 'identity', /You are/);
  await player.selectOption('#solo-rule-set', 'american');
  await player.click('#same-device-start');
  await player.locator('#solo').waitFor();
  await player.waitForFunction(() => /^\?solo=S/.test(location.search));
  const address = new URL(player.url());
  await player.locator('#solo .square[data-square="c3"]').click();
  await player.locator('#solo .square[data-square="d4"]').click();
  await player.locator('#solo .square[data-square="d4"] .piece.dark').waitFor();
  await player.reload();
  await player.locator('#solo').waitFor();
  await player.locator('#solo .square[data-square="d4"] .piece.dark').waitFor();
  check(new URL(player.url()).search === address.search, 'the address still names the game');
  check(await player.locator('#home').isHidden(), 'not the home page');
  await player.click('#solo-home');
  await player.locator('#home').waitFor();
  check(new URL(player.url()).search === '', 'home\'s address names no game');
  await player.close();

  step('a solo game against the computer: the server is killed; a banner covers its board and no move goes (review 4)');
  const lone = await open('solo computer', memoryBase);
  await lone.goto('/');
  await waitText(lone, 'identity', /You are/);
  await lone.selectOption('#solo-rule-set', 'american');
  await lone.selectOption('#solo-level', 'tamer');
  await lone.click('#solo-start');
  await lone.locator('#solo').waitFor();
  await waitText(lone, 'solo-status', /^Your turn/);
  // Online, the keys play c3-d4: the same keys do nothing offline, here and in the lobby above.
  await lone.locator('#solo-board-holder .square[tabindex="0"]').focus();
  for (const key of KEYS_C3_D4) await lone.keyboard.press(key);
  await lone.locator('#solo .square[data-square="d4"] .piece.dark').waitFor();
  await waitText(lone, 'solo-status', /^Your turn/);
  await lone.locator('#solo-board-holder .square[tabindex="0"]').focus();
  await server('kill', 'memory');
  await lone.locator('#solo-offline-overlay').waitFor();
  check(/reconnecting/i.test(await lone.textContent('#solo-offline-overlay')), 'the solo banner says the page is reconnecting');
  lone.sent.length = 0;
  for (const key of KEYS_C3_D4) await lone.keyboard.press(key);
  for (const key of KEYS_C3_D4) await lone.dispatchEvent('#solo-board-holder .board', 'keydown', { key });
  const mine = await lone.$$eval('#solo .square .piece.dark', (discs) => discs.map((d) => d.parentElement.dataset.square));
  for (const name of mine.slice(0, 3)) await lone.locator(`#solo .square[data-square="${name}"]`).click({ force: true });
  for (const id of ['solo-undo', 'solo-resign']) check(await lone.locator(`#${id}`).isDisabled(), `#${id} is disabled while offline`);
  await sleep(300);
  check(!lone.sent.includes('move'), `no solo move was sent while offline (${lone.sent})`);
  await server('start', 'memory');
  // The restarted memory server no longer has the game: the page says so and goes home.
  await lone.locator('#solo-offline-overlay').waitFor({ state: 'hidden', timeout: 40_000 });
  await waitText(lone, 'connection-status', /^Online$/);
  await sleep(500);
  check(!lone.sent.includes('move'), `no solo move was sent after reconnecting (${lone.sent})`);
  await lone.close();

  // Chromium logs a socket that cannot connect, and a resource that did not
  // load, while a server is down; that is the point of the exercise.
  const real = failures.filter((f) => !/WebSocket connection to|Failed to load resource|ERR_CONNECTION_REFUSED/.test(f));
  check(real.length === 0, `no errors on the pages:\n  ${real.join('\n  ')}`);
  console.log('ok');
} catch (error) {
  console.error(error.stack ?? String(error));
  if (failures.length) console.error(`page errors:\n  ${failures.join('\n  ')}`);
  process.exitCode = 1;
} finally {
  await browser.close();
  process.exit(process.exitCode ?? 0);
}
