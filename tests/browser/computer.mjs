// The computer opponent under load, in the browser, run by tests/tests/browser.rs:
//
//   NO_SEARCHER_BASE=<url> node tests/browser/computer.mjs <base-url> <artifact-dir>
//
// <base-url> is a server with one search thread, a 10 s practice Executive
// and a 2 s bound on the wait before a search starts; NO_SEARCHER_BASE is a
// server with no searcher at all (Redis, `--bot-threads 0`, no worker).
// Checks that a player is told the truth: the computer not running at all;
// a search queued behind another game's, with how long it should take; a
// new game refused while the computer is too far behind, with the wait it
// would mean. Exits non-zero, with a message, on the first thing that goes
// wrong.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { TIMEOUT, DESKTOP, PHONE, check, step, launch, newPage, square, waitText } from './lib.mjs';

const [base, artifacts] = process.argv.slice(2);
const noSearcherBase = process.env.NO_SEARCHER_BASE;
if (!base || !artifacts || !noSearcherBase) {
  console.error('usage: NO_SEARCHER_BASE=<url> node computer.mjs <base-url> <artifact-dir>');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const failures = [];
const browser = await launch();

const marked = (page, selector) => page.$$eval(selector, (cells) => cells.map((c) => c.dataset.square));
const soloSquare = (page, name) => square(page, name, '#solo');

/** Starts a Space Mode game (no opening book: every reply is a search) against the Executive. */
async function startExecutive(page) {
  await page.goto('/');
  await page.locator('#solo-form').waitFor();
  await page.selectOption('#solo-rule-set', 'space');
  await page.selectOption('#solo-level', 'executive');
  await page.click('#solo-start');
}

/** Plays the first move the solo board offers the player (Dark). */
async function playSomeMove(page) {
  const mandatory = await marked(page, '#solo .square.must-capture');
  const own = mandatory.length > 0 ? mandatory
    : await page.$$eval('#solo .square .piece.dark', (discs) => discs.map((d) => d.parentElement.dataset.square));
  for (const from of own) {
    await soloSquare(page, from).click();
    let targets = await marked(page, '#solo .square.target');
    if (targets.length === 0) continue;
    while (targets.length > 0) {
      await soloSquare(page, targets[0]).click();
      targets = await marked(page, '#solo .square.target');
    }
    return;
  }
  throw new Error('no dark piece could move');
}

try {
  step('no searcher running: a new game against the computer is refused, and the page says the computer is not available');
  const alone = await newPage(browser, noSearcherBase, failures, 'alone', DESKTOP);
  await startExecutive(alone);
  await waitText(alone, 'notice', /not available right now/i);
  const notice = await alone.textContent('#notice');
  check(/No game was started/.test(notice), `the notice says nothing started: ${notice}`);
  check(await alone.locator('#solo').isHidden(), 'no solo screen opened');
  await alone.screenshot({ path: join(artifacts, 'not-available.png') });

  step('one search thread: the first game\'s search runs, the second\'s waits behind it and says so');
  const first = await newPage(browser, base, failures, 'first', DESKTOP);
  const second = await newPage(browser, base, failures, 'second', PHONE);
  for (const page of [first, second]) {
    await startExecutive(page);
    await page.locator('#solo').waitFor();
    await waitText(page, 'solo-status', /^Your turn/);
  }
  await playSomeMove(first);
  await waitText(first, 'solo-status', /^The computer is thinking/);
  await playSomeMove(second);
  await waitText(second, 'solo-status', /^The computer is busy with 1 other game first — about \d+ s\.$/);
  await second.screenshot({ path: join(artifacts, 'queued-phone.png') });

  step('while both wait, a third game is refused: the notice says how long the computer would keep it waiting');
  const third = await newPage(browser, base, failures, 'third', DESKTOP);
  await startExecutive(third);
  await waitText(third, 'notice', /^The computer is busy: its moves would keep you waiting about \d+ s each/);
  check(await third.locator('#solo').isHidden(), 'no solo screen opened for the third');
  await third.screenshot({ path: join(artifacts, 'busy.png') });

  step('both waiting games get their replies, the queued one after the other');
  await first.waitForFunction(() => /^Your turn/.test(document.getElementById('solo-status').textContent), null, { timeout: 3 * TIMEOUT });
  await second.waitForFunction(() => /^Your turn/.test(document.getElementById('solo-status').textContent), null, { timeout: 3 * TIMEOUT });

  check(failures.length === 0, `page errors: ${failures.join('; ')}`);
  console.log('computer: all checks passed');
} catch (error) {
  console.error(error);
  console.error(`page errors: ${failures.join('; ')}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
