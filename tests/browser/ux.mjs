// The friend-game flow of issue 17, run by tests/tests/e2e/browser.rs:
//
//   node tests/browser/ux.mjs <base-url> <artifact-dir>
//
// A host at 1280×800 and a guest on a phone (390×844), with a spectator:
// names, the invite panel, a series that waits for a host who closed the
// page, both clocks in the window, the turn's tone and title, dragging a
// selected piece (nothing moves the board meanwhile), a declined draw, the
// move list's earlier positions, the invite's QR code, the score you–them, the way back to a
// running game, leaving only after a warning, the rules help, traditional
// colours, the Space Mode board, and axe-core on every screen.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  DESKTOP, PHONE, check, checkAxe, checkFits, clickPath, drag, launch, markedSquares, newPage, square, step,
  waitEmpty, waitPiece, waitStatus, waitText,
} from './lib.mjs';

const [base, artifacts] = process.argv.slice(2);
if (!base || !artifacts) {
  console.error('usage: node ux.mjs <base-url> <artifact-dir>');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const JSQR_SOURCE = readFileSync(createRequire(import.meta.url).resolve('jsqr/dist/jsQR.js'), 'utf8');
const failures = [];
const browser = await launch();
const open = (name, viewport, context) => newPage(browser, base, failures, name, viewport, context);

const seatText = (page, id) => page.textContent(`#${id}`);
const tones = (page) => page.evaluate(() => window.__tones);

try {
  const host = await open('host', DESKTOP);
  const guest = await open('guest', PHONE);
  const watcher = await open('watcher', DESKTOP);

  step('home: axe on desktop and phone; a guest is not offered a stake (item 17)');
  // A browser with the Web Share API (headless Chromium on Linux has none).
  await host.addInitScript(() => {
    navigator.share = async (data) => { window.__shared = data; };
  });
  await host.goto('/');
  await host.locator('#create-form').waitFor();
  await waitText(host, 'identity', /You are Guest-/);
  check(await host.locator('#stake-field').isHidden(), 'no stake field for a guest');
  // This server takes no accounts (welcome.accounts is false): nothing about
  // stakes or signing in is offered; the ranked box says why it is off.
  check(await host.locator('#stake-guest-hint').isHidden(), 'no sign-in hint on a server without accounts');
  check(/signed-in accounts/.test(await host.textContent('#stake-guest-hint')), 'the hint (for servers with accounts) says stakes need an account');
  await checkAxe(host, 'home (desktop)');
  await guest.goto('/');
  await waitText(guest, 'identity', /You are Guest-/);
  await checkAxe(guest, 'home (phone)');

  step('rules help per rule set, in the create form (item 15)');
  check(/How to play American checkers/.test(await host.textContent('#create-help summary')), 'help for American');
  await host.selectOption('#rule-set', 'space');
  await host.click('#create-help summary');
  check(/Wormholes/.test(await host.textContent('#create-help')) && /Thruster boosts/.test(await host.textContent('#create-help')),
    'Space Mode help tells wormholes and boosts');
  await host.selectOption('#rule-set', 'orbit');
  check(/inner ring/.test(await host.textContent('#create-help')) && /Points:/.test(await host.textContent('#create-help')),
    'orbit help tells rings and points');
  await host.selectOption('#rule-set', 'russian');
  check(/White moves first/.test(await host.textContent('#create-help')), 'Russian: White moves first');

  step('a guest chooses a name; the server normalises it; the device remembers it (item 12)');
  await host.fill('#name-input', '  Ann\u200B   the\tBold ');
  await host.click('#name-save');
  await waitText(host, 'identity', /^You are Ann the Bold$/);
  await host.reload();
  await waitText(host, 'identity', /^You are Ann the Bold$/);
  check((await host.inputValue('#name-input')) === 'Ann the Bold', 'the form shows the kept name');
  await guest.fill('#name-input', 'Bob');
  await guest.click('#name-save');
  await waitText(guest, 'identity', /^You are Bob$/);

  step('an invite-only lobby offers only its link, not the code (item 1); no stale error follows into it');
  await host.fill('#join-code', '22222222');
  await host.click('#join-button');
  await host.locator('#notice', { hasText: 'No lobby has that code' }).waitFor();
  await host.selectOption('#rule-set', 'american');
  await host.check('#invite-only');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  check(await host.locator('#notice').isHidden(), 'the home page\'s error is gone from the new lobby');
  check(await host.locator('#invite-text-open').isHidden(), 'no "tell them the code" for an invite-only lobby');
  check(/invite-only, so the link is the way in/.test(await host.textContent('#invite-text-private')), 'the link is the way in');
  const inviteUrl = await host.inputValue('#invite-link');
  await host.click('#share-invite');
  check((await host.evaluate(() => window.__shared?.url)) === inviteUrl, 'Share hands the link to the system share sheet');
  check(/\?invite=/.test(inviteUrl), 'the link carries the invite');
  // The QR code, as drawn in the page, reads back as the link.
  await host.addScriptTag({ content: JSQR_SOURCE });
  const scanned = await host.evaluate(async () => {
    const svg = document.querySelector('#invite-qr svg');
    const image = new Image();
    image.src = `data:image/svg+xml;base64,${btoa(new XMLSerializer().serializeToString(svg))}`;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = 400;
    canvas.height = 400;
    const context = canvas.getContext('2d');
    context.drawImage(image, 0, 0, 400, 400);
    return window.jsQR(context.getImageData(0, 0, 400, 400).data, 400, 400)?.data ?? null;
  });
  check(scanned === inviteUrl, `the QR code reads as the invite link (${scanned})`);
  await checkAxe(host, 'lobby, waiting (desktop)');
  const coordinates = await host.evaluate(() => {
    const boxes = (selector) => [...document.querySelectorAll(selector)].map((e) => e.getBoundingClientRect());
    const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    const labels = boxes('.board > .coordinate');
    const numbers = boxes('.square .number');
    return { labels: labels.length, clashes: labels.filter((l) => numbers.some((n) => overlap(l, n))).length };
  });
  check(coordinates.labels === 16 && coordinates.clashes === 0, `coordinates clear of square numbers: ${JSON.stringify(coordinates)}`);

  step('browser Back from the lobby returns to the home page, leaving it');
  await host.goBack();
  await host.locator('#home').waitFor();
  check(new URL(host.url()).pathname === '/', 'back on the home page of the site');
  check(host.dialogs.length === 0, 'leaving a lobby with no series in play asks nothing');
  check(await host.locator('#notice').isHidden(), 'no stale notice on the home page');

  step('a public best-of-3 lobby; a spectator watches by code');
  await host.uncheck('#invite-only');
  await host.check('input[name=series_length][value="3"]');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  const code = await host.textContent('#invite-code');
  check(/^[2-9A-Z]{8}$/.test(code), `a public lobby shows its code (${code})`);
  const link = new URL(await host.inputValue('#invite-link'));
  await watcher.goto('/');
  await watcher.fill('#join-code', code);
  await watcher.click('#watch-button');
  await waitText(watcher, 'room-meta', /You are watching/);
  const page = await watcher.request.get(`/r/${code}`, { headers: { accept: 'text/html' } });
  check(/<meta property="og:title"/.test(await page.text()), 'the lobby link has a preview (Open Graph tags)');
  const sizes = await watcher.evaluate(() => performance.getEntriesByType('resource')
    .filter((e) => e.name.endsWith('/assets/game.js'))
    .map((e) => [e.encodedBodySize, e.decodedBodySize])[0]);
  // (Files taken from WEB_DIR come from the test, uncompressed.)
  check(process.env.WEB_DIR || (sizes && sizes[0] > 0 && sizes[0] < sizes[1] / 2), `the modules arrive compressed: ${JSON.stringify(sizes)}`);
  await waitText(watcher, 'seat-bottom', /Ann the Bold.*here/);

  step('the host closes the page; the friend joins: no series, no clock against the absent host (item 8)');
  await host.close();
  await waitText(watcher, 'seat-bottom', /Ann the Bold.*away/);
  await guest.goto(link.pathname);
  // Whoever opens a link first sees what the lobby is (issue 18), then joins.
  await guest.click('#preview-join');
  await waitStatus(guest, /Waiting for Ann the Bold to come back/);
  await waitStatus(watcher, /Waiting for Ann the Bold to come back/);
  check(await guest.locator('.seat .clock').count() === 0, 'no clock runs while the host is away');
  check(/away/.test(await seatText(guest, 'seat-top')), 'the guest sees the host is away');

  step('the host comes back by the link: round 1 starts');
  const hostBack = await open('host (back)', DESKTOP, host.context());
  await hostBack.goto(link.pathname);
  await waitStatus(hostBack, /^Your turn\. Round 1, best of 3; You 0–0 Bob\./);
  await waitStatus(guest, /^Ann the Bold to move \(Black\)\. Round 1, best of 3; You 0–0 Ann the Bold\./);
  check(/here/.test(await seatText(guest, 'seat-top')), 'the guest sees the host is here');
  check(await hostBack.locator('#download-pdn').isHidden(), 'no PDN to download before a game has ended');

  step('board and both clocks fit the window on desktop and phone (item 10); axe on the game');
  await checkFits(hostBack, 'game at 1280×800');
  await checkFits(guest, 'game at 390×844');
  await checkAxe(hostBack, 'game (desktop)');
  await checkAxe(guest, 'game (phone)');
  const guestTitle = await guest.title();
  check(!/Your turn/.test(guestTitle), `not the guest's turn yet (${guestTitle})`);

  step('the host moves: the guest hears a tone and sees it in the title; screen readers hear the move (item 5)');
  const tonesBefore = await tones(guest);
  await clickPath(hostBack, ['c3', 'd4']);
  await waitStatus(guest, /^Your turn/);
  await guest.waitForFunction(() => document.title.startsWith('● Your turn'));
  check((await tones(guest)) > tonesBefore, 'a tone played for the guest');
  check(!/Your turn/.test(await hostBack.title()), 'the host\'s title no longer says it is their turn');
  check(/Ann the Bold played 11-15/.test(await guest.textContent('#announce')), 'the move is announced');
  check(await hostBack.locator('.board.pointer').count() === 1, 'a click hides the keyboard focus ring');

  step('click a piece, then drag it: the piece follows, nothing moves the board (items 3, 4)');
  await square(guest, 'f6').click();
  check((await markedSquares(guest, 'selected')).join() === 'f6', 'f6 is selected');
  await drag(guest, 'f6', 'e5', async () => {
    check(await guest.locator('.piece.ghost').count() === 1, 'the dragged piece follows the pointer');
    // Things that happen mid-drag must not move the board: a notice, a spectator leaving.
    await guest.evaluate(() => {
      const box = document.getElementById('notice');
      box.textContent = 'A notice mid-drag';
      box.hidden = false;
    });
    await watcher.click('#leave');
    await waitText(guest, 'room-meta', /0 watching/);
  });
  await waitPiece(hostBack, 'e5', 'light');
  check(await guest.locator('.piece.ghost').count() === 0, 'the dragged piece is put down');

  step('a declined draw is reported to the offerer (item 13)');
  await waitStatus(hostBack, /must capture/);
  await hostBack.click('#offer-draw');
  await clickPath(hostBack, ['d4', 'f6']);
  await guest.locator('#decline-draw').waitFor();
  await guest.click('#decline-draw');
  await waitStatus(hostBack, /Your draw offer was declined/);

  step('the move list shows earlier positions, by click and by arrow keys (item 11)');
  await hostBack.click('#moves button[data-ply="1"]');
  await hostBack.locator('#viewing').waitFor();
  await waitPiece(hostBack, 'd4', 'dark');
  await waitPiece(hostBack, 'f6', 'light');
  await hostBack.keyboard.press('ArrowRight');
  await waitPiece(hostBack, 'e5', 'light');
  check(/after move 2/.test(await hostBack.textContent('#viewing-text')), 'the position after move 2');
  await hostBack.keyboard.press('End');
  await hostBack.locator('#viewing').waitFor({ state: 'hidden' });
  await waitEmpty(hostBack, 'e5');
  await waitPiece(hostBack, 'f6', 'dark');
  await hostBack.click('#moves button[data-ply="2"]');
  await hostBack.click('#back-to-live');
  await hostBack.locator('#viewing').waitFor({ state: 'hidden' });

  step('the guest turns the sound off; the setting is remembered');
  await guest.click('#sound-toggle');
  check((await guest.getAttribute('#sound-toggle', 'aria-pressed')) === 'false', 'muted');
  await guest.reload();
  await waitStatus(guest, /must capture/);
  check((await guest.getAttribute('#sound-toggle', 'aria-pressed')) === 'false', 'still muted after a reload');

  step('the score reads you–them, for each player and for spectators (item 6)');
  const scores = await hostBack.evaluate(async () => {
    const { GameScreen } = await import('/assets/game.js');
    const state = {
      rule_set: 'american', series_length: 3,
      players: [{ id: 'a', name: 'Ann' }, { id: 'b', name: 'Bob' }],
      series: { round: 2, max_rounds: 6, wins: [0, 1], draws: 0 },
    };
    const score = (seat) => GameScreen.prototype.scoreText.call({ state, seat });
    const round = GameScreen.prototype.roundText.call({ state });
    return [score(0), score(1), score(-1), round];
  });
  check(JSON.stringify(scores) === JSON.stringify(['You 0–1 Bob', 'You 1–0 Ann', 'Ann 0–1 Bob', 'Round 2, best of 3']),
    `scores: ${JSON.stringify(scores)}`);

  step('spectators and players can flip the board');
  check(await guest.locator('.board.flipped').count() === 1, 'the board is turned for the guest, who plays White');
  await guest.click('#flip-board');
  check(await guest.locator('.board.flipped').count() === 0, 'flipped back the other way');
  await guest.click('#flip-board');
  check(await guest.locator('.board.flipped').count() === 1, 'and turned again');

  await hostBack.screenshot({ path: join(artifacts, 'game-desktop.png') });
  await guest.screenshot({ path: join(artifacts, 'game-phone.png') });

  step('Leave during a series asks first (item 2)');
  hostBack.dismissNext = true;
  await hostBack.click('#leave');
  check(/forfeits the whole series/.test(hostBack.dialogs.at(-1) ?? ''), `the warning says what leaving does (${hostBack.dialogs.at(-1)})`);
  check(await hostBack.locator('#room').isVisible(), 'still in the lobby after saying no');

  step('home while the game runs: a banner leads back to it (item 9)');
  await hostBack.click('.brand');
  await hostBack.locator('#resume-banner').waitFor();
  check(new RegExp(code).test(await hostBack.textContent('#resume-text')), 'the banner names the lobby');
  await hostBack.click('#resume-link');
  await waitText(hostBack, 'seat-bottom', /Ann the Bold/);
  await waitStatus(hostBack, /Bob to move/);

  step('the host resigns; the guest wins the series');
  await hostBack.click('#resign');
  await waitStatus(guest, /You win the series/);
  await hostBack.locator('#download-pdn').waitFor();

  step('traditional colours: Russian has White moving first, drawn white (item 16); the solo screen passes axe');
  const solo = await open('solo', PHONE);
  await solo.goto('/');
  await solo.selectOption('#solo-rule-set', 'russian');
  await solo.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await solo.click('#same-device-start');
  await waitText(solo, 'solo-status', /^White to move/);
  check(await solo.evaluate(() => window.scrollY) === 0, 'a new screen opens at the top, header in view');
  check(await solo.locator('#solo .board.white-first').count() === 1, 'the board draws the first mover white');
  const shade = await solo.$eval('#solo .square[data-square="c3"] .piece', (p) => getComputedStyle(p).backgroundImage);
  check(/255, 255, 255/.test(shade), `White's men are drawn white (${shade})`);
  check((await square(solo, 'c3', '#solo').getAttribute('aria-label')).startsWith('c3, white man'), 'and named white');
  await checkAxe(solo, 'solo (phone)');

  step('Space Mode: pieces on the dark squares, with American square numbers (item 14)');
  await solo.click('#solo-home');
  await solo.selectOption('#solo-rule-set', 'space');
  await solo.click('#same-device-start');
  await waitText(solo, 'solo-status', /^Black to move/);
  const space = await solo.evaluate(() => ({
    onLight: document.querySelectorAll('#solo .square.light-square .piece').length,
    onDark: document.querySelectorAll('#solo .square.dark-square .piece').length,
    numbers: document.querySelectorAll('#solo .square .number').length,
    g1: document.querySelector('#solo .square[data-square="g1"] .number')?.textContent,
    darkColour: getComputedStyle(document.querySelector('#solo .square.dark-square')).backgroundColor,
  }));
  check(space.onLight === 0 && space.onDark === 24, `pieces on the dark squares only: ${JSON.stringify(space)}`);
  check(space.numbers === 32 && space.g1 === '1', `American numbers on the Space Mode board: ${JSON.stringify(space)}`);
  check(space.darkColour === 'rgb(123, 82, 51)', `the playing squares are the classic board's dark squares: ${JSON.stringify(space)}`);
  await solo.screenshot({ path: join(artifacts, 'space-phone.png') });

  step('the leaderboards pass axe; the dark mode switch is remembered');
  await solo.click('#solo-home');
  await solo.click('#open-leaderboards');
  await solo.locator('#leaderboard-empty').waitFor();
  await checkAxe(solo, 'leaderboards (phone)');
  await solo.click('#theme-toggle');
  const theme = await solo.evaluate(() => document.documentElement.dataset.theme);
  await solo.reload();
  check((await solo.evaluate(() => document.documentElement.dataset.theme)) === theme, `the theme (${theme}) is kept`);
  await solo.locator('#home').waitFor();
  await checkAxe(solo, `home in the ${theme} theme`);
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
console.log('all issue 17 checks passed');
