// Correspondence games in the web client (issue 18), run by
// tests/tests/e2e/browser.rs against a server whose claim window is 2 s:
//
//   node tests/browser/correspondence.mjs <base-url> <artifact-dir>
//
// A host creates an invite-only correspondence game and goes to "My games"
// keeping the seat; a friend opens the invite link, sees what it is (rule
// set, pace, host) and joins; the series starts with the host away, and the
// host's home page turns the tab's title into "(1) Your move"; moves over a
// reload and the home page; the waiting player's (the host's) Claim win is
// refused before the claim time and wins the game after it. axe-core on the
// preview, the home page with "My games", and the correspondence game.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  DESKTOP, PHONE, check, checkAxe, clickPath, launch, newPage, step, waitPiece, waitStatus, waitText,
} from './lib.mjs';

const [base, artifacts] = process.argv.slice(2);
if (!base || !artifacts) {
  console.error('usage: node correspondence.mjs <base-url> <artifact-dir>');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const failures = [];
const browser = await launch();
const open = (name, viewport, context) => newPage(browser, base, failures, name, viewport, context);

/** What a page does when its person comes back to the tab: it asks for its games again. */
const comeBack = (page) => page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
const entry = (page, code) => page.locator(`#my-games li[data-code="${code}"]`);

try {
  const host = await open('host', DESKTOP);
  const guest = await open('guest', PHONE);

  step('the create form offers the pace to a guest, and explains correspondence games');
  await host.goto('/');
  await waitText(host, 'identity', /You are Guest-/);
  await host.fill('#name-input', 'Ann');
  await host.click('#name-save');
  await waitText(host, 'identity', /^You are Ann$/);
  const paces = await host.$$eval('input[name=pace]', (inputs) => inputs.map((i) => `${i.value}:${i.checked}`));
  check(paces.join() === 'live:true,correspondence:false', `pace choices, live by default: ${paces}`);
  check(/Correspondence — days per move/.test(await host.textContent('#paces')), 'the correspondence choice says days per move');
  await host.click('#pace-help summary');
  const help = await host.textContent('#pace-help');
  check(/2 days/.test(help) && /7 days/.test(help) && /creator of the lobby moves first/.test(help),
    `the help gives the claim time, the expiry and who moves first: ${help}`);
  check(await host.locator('#my-games-panel').isHidden(), 'no "My games" before there are any');

  step('the host creates an invite-only correspondence game and goes to "My games" keeping the seat');
  await host.selectOption('#rule-set', 'american');
  await host.check('input[name=series_length][value="1"]');
  await host.check('input[name=pace][value=correspondence]');
  await host.check('#invite-only');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  const link = new URL(await host.inputValue('#invite-link'));
  const code = link.pathname.split('/').pop();
  check(/^[2-9A-Z]{8}$/.test(code) && link.searchParams.get('invite'), `an invite link: ${link}`);
  await waitText(host, 'room-meta', /American checkers · correspondence/);
  await waitText(host, 'pace-text', /starts as soon as the free seat is taken/);
  check(/with no winner on/.test(await host.textContent('#pace-expiry')), 'the lobby\'s expiry is shown');
  const summary = await (await host.request.get(`/r/${code}?format=json&invite=${link.searchParams.get('invite')}`)).json();
  check(summary.pace === 'correspondence' && summary.host_name === 'Ann', `GET /r/CODE?format=json: ${JSON.stringify(summary)}`);
  await host.click('#room-home');
  await host.locator('#home').waitFor();
  check(new URL(host.url()).pathname === '/', 'the address is the home page');
  await entry(host, code).waitFor();
  const waitingText = await entry(host, code).textContent();
  check(/American checkers · Correspondence · waiting for an opponent/.test(waitingText), `the waiting game is listed: ${waitingText}`);
  check(!/Your turn/.test(waitingText), 'not marked as your turn');

  // Nobody is in the lobby now: the server unloads it after a second (in
  // this test), and loads it back when the friend asks about it.
  const unloaded = async () => {
    const text = await (await host.request.get('/metrics')).text();
    return Number(text.match(/^\w*rooms_unloaded_total (\d+)/m)?.[1] ?? 0);
  };
  for (let i = 0; i < 50 && await unloaded() === 0; i += 1) await host.waitForTimeout(200);
  check(await unloaded() === 1, 'the lobby was unloaded while nobody was in it');

  step('the friend opens the invite link and sees what it is before joining');
  await guest.goto(link.pathname + link.search);
  await guest.locator('#preview').waitFor();
  await waitText(guest, 'preview-title', /Ann invites you to play/);
  const details = await guest.textContent('#preview-details');
  for (const fact of [code, 'American checkers', 'Correspondence — days per move', 'One game', 'None (a free game)', 'HostAnn', 'Invite-only']) {
    check(details.includes(fact), `the preview shows "${fact}": ${details}`);
  }
  check(/Ann moves first/.test(await guest.textContent('#preview-note')), 'the preview says who moves first');
  check(await guest.locator('#room').isHidden(), 'no seat taken yet');
  check(await guest.locator('#preview-watch').isVisible(), 'Watch is offered too');
  await checkAxe(guest, 'lobby preview (phone)');
  await guest.screenshot({ path: join(artifacts, 'preview.png') });
  await guest.click('#preview-join');
  await waitStatus(guest, /^Ann to move \(Black\)/);
  check(await guest.locator('.seat .clock').count() === 0, 'no move clock in a correspondence game');
  await waitText(guest, 'pace-text', /Waiting for Ann's move\. You can claim a win if they haven't moved by/);
  check(await guest.locator('#claim-win').isDisabled(), 'the guest\'s Claim win waits for the claim time');

  step('the series started with the host away: the host\'s home page says it is their move, in the title too');
  await comeBack(host);
  await host.locator(`#my-games li.your-turn[data-code="${code}"]`).waitFor();
  await host.waitForFunction(() => document.title.startsWith('(1) Your move — Jumpgate'));
  const turnText = await entry(host, code).textContent();
  check(/Your turn/.test(turnText) && /against Guest-/.test(turnText) && /Move by/.test(turnText), `the entry: ${turnText}`);
  await checkAxe(host, 'home with "My games" (desktop)');
  await host.screenshot({ path: join(artifacts, 'my-games.png') });

  step('the host opens the game from the list: the alert goes; no countdown, "take your time"');
  await entry(host, code).locator('button').click();
  await waitStatus(host, /^Your move — take your time\./);
  check(!/Your move — Jumpgate/.test(await host.title()), `the title alert is cleared (${await host.title()})`);
  check(await host.locator('.seat .clock').count() === 0, 'no move clock for the host either');
  check(await host.locator('#claim-win').isHidden(), 'no Claim win for the side to move');
  await waitText(host, 'pace-text', /can claim a win if you haven't moved by/);
  await checkAxe(host, 'correspondence game (desktop)');
  await clickPath(host, ['c3', 'd4']);
  await waitPiece(guest, 'd4', 'dark');
  await waitStatus(guest, /^Your move — take your time/);

  step('the host reloads the game (straight back in, no preview), then goes home: it is the opponent\'s turn');
  await host.reload();
  await waitStatus(host, /to move \(White\)/);
  check(await host.locator('#preview').isHidden(), 'a seated player gets no preview');
  await host.goto('/');
  await entry(host, code).waitFor();
  const theirTurn = await entry(host, code).textContent();
  check(!/Your turn/.test(theirTurn) && /You can claim a win if they haven't moved by/.test(theirTurn) && /last move/.test(theirTurn),
    `the entry while it is their move: ${theirTurn}`);
  check(!/Your move/.test(await host.title()), 'no title alert while it is their move');
  const token = await host.evaluate(() => localStorage.getItem('jumpgate.token'));
  const api = await (await host.request.get('/api/my-games', { headers: { authorization: `Bearer ${token}` } })).json();
  check(api.games?.some((g) => g.code === code && g.your_turn === false), `GET /api/my-games: ${JSON.stringify(api)}`);

  step('the friend moves: the host\'s page notices and alerts in the title');
  await clickPath(guest, ['b6', 'a5']);
  await waitStatus(guest, /^Ann to move/);
  await comeBack(host);
  await host.locator(`#my-games li.your-turn[data-code="${code}"]`).waitFor();
  await host.waitForFunction(() => document.title.startsWith('(1) Your move — '));
  check((await host.locator('#my-games li').first().getAttribute('data-code')) === code, 'the game to move in comes first');
  await entry(host, code).locator('button').click();
  await waitStatus(host, /^Your move — take your time/);
  await host.waitForFunction(() => !document.title.includes('(1)'));

  step('the host, now waiting, claims: refused before the claim time, and wins after it');
  await clickPath(host, ['g3', 'h4']);
  await waitPiece(guest, 'h4', 'dark');
  await waitStatus(host, /to move \(White\)/);
  check(await host.locator('#claim-win').isVisible() && await host.locator('#claim-win').isDisabled(),
    'Claim win is shown to the waiting player, disabled before the claim time');
  check(await guest.locator('#claim-win').isHidden(), 'no Claim win for the side to move');
  // As from a page whose clock runs ahead: the server refuses, saying how long is left.
  await host.evaluate(() => {
    const button = document.getElementById('claim-win');
    button.disabled = false;
    button.click();
  });
  await host.locator('#notice', { hasText: /Too early to claim: you can claim this game in \d+ s/ }).waitFor();
  await host.locator('#claim-win:not([disabled])').waitFor();
  await waitText(host, 'pace-text', /you can claim a win now/);
  await waitText(guest, 'pace-text', /the claim time has passed/);
  await host.click('#claim-win');
  await waitStatus(host, /You won round 1 \(win claimed: the side to move let the claim time pass\)/);
  await waitStatus(guest, /Ann won round 1 \(win claimed/);
  check(await host.locator('#claim-win').isHidden(), 'no Claim win once the game is over');
  await host.screenshot({ path: join(artifacts, 'claimed.png') });
  await checkAxe(guest, 'claimed correspondence game (phone)');
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
console.log('all correspondence checks passed');
