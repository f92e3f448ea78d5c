// The game screen's rough edges of issue 35 (items 3, 4, 6, 8, 9, 10, 11
// and 13), run by tests/tests/e2e/browser.rs:
//
//   node tests/browser/game-ux.mjs <base-url> <artifact-dir>
//
// A host at 1280×800 and a guest with a long name on a 390×844 phone play
// a best-of-3 lobby; a spectator comes in after four moves and looks at the
// position after the first (sent by the server). The host's resignation
// asks first, naming the series (said no, nothing happens), and the seat
// bars then give the guest the win on every page. The host calls a
// rematch: the guest sees "Ann wants a rematch" with Accept and Decline,
// declines (told the host is not), and accepts after all; once that series
// is over too, Ann's next call is offered with Accept again. On the phone
// the seat bars keep the name, "you" and the score in view, in American,
// Space Mode and orbit lobbies; the orbit points (the server's) are
// explained, and the orbit board says a selection and the move played to
// screen readers; the series choice and the room's line fit the phone. The
// leaderboards of this server without sign-in say ranked play is off. A
// same-device game's moves can be picked to see earlier positions, where a
// move legal on the live board is neither made nor sent, and the device
// record sits below the move list. axe-core scans the rematch line, the
// orbit lobby and the same-device game on the phone.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  DESKTOP, PHONE, check, checkAxe, clickPath, launch, newPage, square, step, waitEmpty, waitPiece, waitStatus, waitText,
} from './lib.mjs';

const [base, artifacts] = process.argv.slice(2);
if (!base || !artifacts) {
  console.error('usage: node game-ux.mjs <base-url> <artifact-dir>');
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const failures = [];
const browser = await launch();
const open = (name, viewport) => newPage(browser, base, failures, name, viewport);
const GUEST = 'Guadalupe Fernández';

/** Fails unless `selector`'s text fits its box: nothing cut or hidden by overflow. */
async function checkFitsWidth(page, selector, where) {
  const boxes = await page.$$eval(selector, (elements) => elements.map((e) => ({
    text: e.textContent.trim(), scroll: e.scrollWidth, client: e.clientWidth,
  })));
  check(boxes.length > 0, `${where}: ${selector} is on the page`);
  for (const box of boxes) {
    check(box.scroll <= box.client, `${where}: "${box.text}" fits (${box.scroll} > ${box.client})`);
  }
}

/**
 * A seat bar's name, "you" (when `you`) and score, each wholly inside the
 * bar and not cut; returns their texts.
 */
async function checkSeat(page, id, you, where) {
  const seat = await page.$eval(`#${id}`, (bar) => {
    const outer = bar.getBoundingClientRect();
    const part = (selector) => {
      const e = bar.querySelector(selector);
      if (!e) return null;
      const r = e.getBoundingClientRect();
      const inside = r.width > 0 && r.left >= outer.left - 0.5 && r.right <= outer.right + 0.5
        && r.top >= outer.top - 0.5 && r.bottom <= outer.bottom + 0.5;
      return { text: e.textContent.trim(), inside, cut: e.scrollWidth > e.clientWidth + 0.5 };
    };
    return { name: part('.name'), you: part('.you'), score: part('.score') };
  });
  for (const key of ['name', 'score', ...(you ? ['you'] : [])]) {
    const part = seat[key];
    check(part && part.inside && !part.cut, `${where}: ${id}'s ${key} is in full view (${JSON.stringify(part)})`);
  }
  check(you === Boolean(seat.you), `${where}: "you" is on ${you ? 'this' : 'no other'} seat`);
  return seat;
}

/** Creates a lobby on `host`'s home page; returns its code. */
async function createLobby(host, ruleSet, seriesLength) {
  await host.goto('/');
  await host.selectOption('#rule-set', ruleSet);
  await host.check(`input[name=series_length][value="${seriesLength}"]`);
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  return (await host.textContent('#invite-code')).trim();
}

async function joinByCode(page, code, button = '#join-button') {
  await page.goto('/');
  await page.fill('#join-code', code);
  await page.click(button);
  // Joining by code shows what the lobby is first (issue 18).
  await page.locator('#room:not([hidden]), #preview-join:visible').first().waitFor();
  if (await page.locator('#preview-join').isVisible()) await page.click('#preview-join');
  await page.locator('#room').waitFor();
}

try {
  const host = await open('host', DESKTOP);
  const guest = await open('guest', PHONE);
  const watcher = await open('watcher', DESKTOP);

  step('names; the series choice is short and explained, and fits a phone (item 13)');
  await host.goto('/');
  await waitText(host, 'identity', /You are Guest-/);
  await host.fill('#name-input', 'Ann');
  await host.click('#name-save');
  await waitText(host, 'identity', /^You are Ann$/);
  await guest.goto('/');
  await waitText(guest, 'identity', /You are Guest-/);
  await guest.fill('#name-input', GUEST);
  await guest.click('#name-save');
  await waitText(guest, 'identity', new RegExp(`^You are ${GUEST}$`));
  await waitText(guest, 'series-hint', /A draw is played again, once/);
  check(!/up to 2 if drawn/.test(await guest.textContent('#create-form')), 'the old "up to 2 if drawn" is gone');
  await checkFitsWidth(guest, '#series-lengths label', 'create form at 390 px');
  await checkFitsWidth(guest, '#series-hint', 'create form at 390 px');
  await guest.check('input[name=series_length][value="3"]');
  await waitText(guest, 'series-hint', /First to 2 wins/);
  await guest.selectOption('#rule-set', 'orbit');
  await waitText(guest, 'series-hint', /most points in total wins/);
  await checkFitsWidth(guest, '#series-lengths label', 'orbit series at 390 px');

  step('a best-of-3 lobby; on the phone the seat bars keep the name, "you" and the score (item 4)');
  const code = await createLobby(host, 'american', 3);
  await joinByCode(guest, code);
  await waitStatus(host, /^Your turn\. Round 1, best of 3/);
  await checkSeat(guest, 'seat-bottom', true, 'American at 390 px');
  await checkSeat(guest, 'seat-top', false, 'American at 390 px');
  check((await guest.textContent('#seat-bottom .name')) === GUEST, 'the guest\'s whole name shows');
  check(/0 wins/.test(await guest.textContent('#seat-bottom .score')), 'the guest\'s score shows');
  await checkFitsWidth(guest, '#room-meta', 'the lobby\'s line at 390 px');
  check(/Best of 3/.test(await guest.textContent('#room-meta')), 'the lobby\'s line names the series');
  await guest.screenshot({ path: join(artifacts, 'seats-phone.png') });

  step('four moves; a spectator who comes in then can look at the position after move 1 (item 9)');
  await clickPath(host, ['a3', 'b4']);
  await waitStatus(guest, /^Your turn/);
  await clickPath(guest, ['h6', 'g5']);
  await waitStatus(host, /^Your turn/);
  await clickPath(host, ['b2', 'a3']);
  await waitStatus(guest, /^Your turn/);
  await clickPath(guest, ['g7', 'h6']);
  await waitStatus(host, /^Your turn/);
  await joinByCode(watcher, code, '#watch-button');
  await waitText(watcher, 'room-meta', /You are watching/);
  const first = watcher.locator('#moves button[data-ply="1"]:not([disabled])');
  await first.waitFor();
  await first.click();
  await watcher.locator('#viewing:not([hidden])').waitFor();
  check(/after move 1 \(12-16\)/.test(await watcher.textContent('#viewing-text')), 'the viewing panel names move 1');
  await waitPiece(watcher, 'b4', 'dark');
  await waitEmpty(watcher, 'a3'); // refilled by move 3, so this is move 1's board
  await waitPiece(watcher, 'h6', 'light');
  await waitPiece(watcher, 'g7', 'light'); // moved away by move 4
  await watcher.click('#back-to-live');
  await waitPiece(watcher, 'a3', 'dark');

  step('Resign names the series on the button and in its question (item 10)');
  check(/series/.test(await host.textContent('#resign')), `the button says it (${await host.textContent('#resign')})`);
  host.dismissNext = true;
  await host.click('#resign');
  const question = host.dialogs.at(-1) ?? '';
  check(/whole series/.test(question) && /not this round alone/.test(question), `the question says the series goes: ${question}`);
  await host.waitForTimeout(500); // said no: nothing happens, even a moment later
  check(await host.locator('#resign').isVisible(), 'said no: Resign is still offered');
  check(!/won round|series \(/.test(await host.textContent('#status')), `said no: no result (${await host.textContent('#status')})`);
  check(!/won round/.test(await guest.textContent('#status')), 'said no: the guest sees no result either');

  step('resigned: the seat bars give the winner the round (item 3)');
  await host.click('#resign');
  await waitStatus(guest, /You won round 1 \(resignation\)\. You win the series/);
  // Each page's own state first: the host's and the spectator's may come a moment after the guest's.
  const theyWon = new RegExp(`^${GUEST} won round 1 \\(resignation\\)\\. ${GUEST} wins the series`);
  await waitStatus(host, theyWon);
  await waitStatus(watcher, theyWon);
  for (const [who, page] of [['guest', guest], ['spectator', watcher], ['host', host]]) {
    const seats = Object.fromEntries(await page.$$eval('#room .seat', (bars) => bars.map((b) => [
      b.querySelector('.name').textContent, b.querySelector('.score').textContent])));
    check(seats[GUEST] === '1 win' && seats.Ann === '0 wins', `${who} sees 1–0 on the seat bars: ${JSON.stringify(seats)}`);
  }

  step('a rematch call shows as a line with Accept and Decline; Decline says the host is not told (item 6)');
  await host.click('#rematch');
  await waitText(guest, 'rematch-offer-text', /^Ann wants a rematch/);
  check(await guest.locator('#accept-rematch').isVisible() && await guest.locator('#decline-rematch').isVisible(),
    'Accept and Decline are offered');
  check(await guest.locator('#rematch').isHidden(), 'the line\'s Accept stands in for the Rematch button');
  check(await host.locator('#rematch-offer').isHidden(), 'the caller sees no line of their own');
  await guest.screenshot({ path: join(artifacts, 'rematch-phone.png') });
  await checkAxe(guest, 'the rematch line (phone)');
  await guest.click('#decline-rematch');
  await waitText(guest, 'rematch-offer-text', /Ann is not told/);
  check(await guest.locator('#accept-rematch').isHidden(), 'declined: no Accept any more');
  check((await guest.textContent('#rematch')) === 'Rematch', 'the Rematch button is back, for a change of mind');
  await guest.click('#rematch');
  await waitStatus(guest, /^Your turn\. Round 1, best of 3; You 0–0 Ann/);
  await checkSeat(guest, 'seat-bottom', true, 'after the rematch');

  step('that series played to its end too: Ann\'s next rematch call is a new one, offered with Accept');
  await host.click('#resign');
  await waitStatus(guest, /You won round 1 \(resignation\)\. You win the series/);
  await host.click('#rematch');
  await waitText(guest, 'rematch-offer-text', /^Ann wants a rematch/);
  check(await guest.locator('#accept-rematch').isVisible(), 'the new call shows Accept, not the old Decline');

  step('Space Mode: the phone\'s seat bars keep the name, "you" and the score beside the boosts (item 4)');
  await guest.click('#leave');
  await guest.locator('#home').waitFor();
  const space = await createLobby(host, 'space', 1);
  await joinByCode(guest, space);
  await waitText(guest, 'seat-bottom', /boosts left/);
  await checkSeat(guest, 'seat-bottom', true, 'Space Mode at 390 px');
  await checkSeat(guest, 'seat-top', false, 'Space Mode at 390 px');
  await guest.click('#leave');
  await guest.locator('#home').waitFor();

  step('orbit: the points are explained, and the phone\'s seat bars keep what matters (items 8, 4)');
  const orbit = await createLobby(host, 'orbit', 3);
  await joinByCode(guest, orbit);
  await waitText(guest, 'orbit-note', /Points if the game ended now/);
  const note = await guest.textContent('#orbit-note');
  check(/^Points if the game ended now: You 2, Ann 2\./.test(note), `both sides' points, the server's: ${note}`);
  check(/2 more while the other side has at most three pieces there \(so both start with 2\)/.test(note), `how they are counted: ${note}`);
  check(/Series: You 0–0 Ann on points, adding up each game's points/.test(note), `the series score is explained: ${note}`);
  check(/points as the board stands/.test(await guest.textContent('#room-help')), 'the rules help says what the seats\' points are');
  await checkSeat(guest, 'seat-bottom', true, 'orbit at 390 px');
  await checkSeat(guest, 'seat-top', false, 'orbit at 390 px');
  check(/series points/.test(await guest.textContent('#seat-bottom .score')), 'the score is in series points');
  await guest.screenshot({ path: join(artifacts, 'orbit-phone.png') });
  await checkAxe(guest, 'an orbit lobby with its points explained (phone)');
  // The orbit board says a selection and the move played, as the 8×8 board does (item 14).
  const orbitLive = async () => (await host.textContent('#room .orbit-board .board-announce')).trim();
  await waitStatus(host, /^Your turn/);
  let origin = null;
  for (const piece of await host.locator('#room .orbit-square.occupied.dark').all()) {
    await piece.click();
    if (await host.locator('#room .orbit-square.target').count() > 0) {
      origin = await piece.getAttribute('data-square');
      break;
    }
    await piece.click(); // no moves: let go
  }
  check(origin !== null, 'a dark piece has moves');
  await host.waitForFunction((o) => new RegExp(`^${o} selected, \\d+ moves?: `).test(
    document.querySelector('#room .orbit-board .board-announce')?.textContent ?? ''), origin);
  const targets = await host.$$eval('#room .orbit-square.target', (cells) => cells.map((c) => c.dataset.square).sort());
  check((await orbitLive()).endsWith(targets.join(', ')), `the selection's targets are said: ${await orbitLive()}`);
  await host.click(`#room .orbit-square[data-square="${targets[0]}"]`);
  if (await host.locator('#room .orbit-choice').count() > 0) await host.locator('#room .orbit-choice').first().click();
  await host.waitForFunction((words) => document.querySelector('#room .orbit-board .board-announce')?.textContent === words,
    `moved ${origin} to ${targets[0]}`);
  await waitStatus(guest, /^Your turn/);
  await guest.click('#leave');
  await host.click('#leave');

  step('same device: eight moves; an earlier one shows its position; the record sits below the list (items 9, 11)');
  const solo = await open('solo', PHONE);
  const at = (name) => `#solo .square[data-square="${name}"]`;
  const moveFrames = [];
  solo.on('websocket', (ws) => ws.on('framesent', (frame) => {
    if (typeof frame.payload === 'string' && /"type":"move"/.test(frame.payload)) moveFrames.push(frame.payload);
  }));
  await solo.goto('/');
  // This server has no sign-in: the leaderboards say ranked play is off, not "play a ranked game" (issue 35 item 7).
  await solo.click('#open-leaderboards');
  await waitText(solo, 'leaderboard-empty', /this server has no sign-in, so ranked play and its leaderboards are off here/);
  check(!/Play a ranked game/.test(await solo.textContent('#leaderboard-empty')), 'no dead-end "play a ranked game"');
  await solo.click('#leaderboard-home');
  await solo.selectOption('#solo-rule-set', 'american');
  await solo.click('#same-device-start');
  await waitText(solo, 'solo-status', /^Black to move/);
  const plies = [['a3', 'b4'], ['h6', 'g5'], ['b2', 'a3'], ['g7', 'h6'], ['c1', 'b2'], ['f8', 'g7'], ['e3', 'd4'], ['g5', 'h4']];
  for (const [i, [from, to]] of plies.entries()) {
    await solo.click(at(from));
    await solo.click(at(to));
    await waitText(solo, 'solo-status', i % 2 === 0 ? /^White to move/ : /^Black to move/);
  }
  check(await solo.locator('#solo-moves li').count() === 4, 'four rows of moves');
  check(moveFrames.length === 8, `eight move frames sent (${moveFrames.length})`);
  const layout = await solo.evaluate(() => {
    const box = (e) => e.getBoundingClientRect();
    const record = box(document.getElementById('solo-record'));
    const rows = [...document.querySelectorAll('#solo-moves li')].map(box);
    const list = box(document.getElementById('solo-moves'));
    const overlaps = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    return { record: record.top, list: list.bottom, clashes: rows.filter((r) => overlaps(r, record)).length };
  });
  check(layout.clashes === 0 && layout.record >= layout.list, `the device record is below the moves: ${JSON.stringify(layout)}`);
  await solo.click('#solo-moves button[data-ply="1"]');
  await solo.locator('#solo-viewing:not([hidden])').waitFor();
  check(/after move 1 \(12-16\)/.test(await solo.textContent('#solo-viewing-text')), 'the panel names move 1');
  await waitPiece(solo, 'b4', 'dark');
  await waitEmpty(solo, 'a3');
  await waitPiece(solo, 'g7', 'light');
  await solo.keyboard.press('ArrowRight');
  check(/after move 2 \(21-17\)/.test(await solo.textContent('#solo-viewing-text')), 'the arrow key steps to move 2');
  // g3-f4 is legal on the live board (checked below); here it is a look, not a move.
  await waitPiece(solo, 'g3', 'dark');
  await solo.click(at('g3'));
  await solo.click(at('f4'));
  await solo.waitForTimeout(500);
  check(await solo.locator(`${at('f4')} .piece`).count() === 0, 'f4 stays empty on the earlier position');
  check(moveFrames.length === 8, `no move is sent from an earlier position (${moveFrames.length} move frames)`);
  check(/^Black to move/.test(await solo.textContent('#solo-status')), 'no move is made from an earlier position');
  check(await solo.locator('#solo .square.selected').count() === 0, 'nothing is selected on an earlier position');
  await solo.click('#solo-back-to-live');
  await waitPiece(solo, 'a3', 'dark');
  check(await solo.locator('#solo-viewing').isHidden(), 'back to the live board');
  await solo.click(at('g3'));
  check(await solo.locator(`${at('f4')}.target`).count() === 1, 'g3-f4 is a legal move on the live board');
  await solo.click(at('g3')); // let go
  check(await solo.locator('#solo .square.selected').count() === 0, 'let go');
  await solo.screenshot({ path: join(artifacts, 'solo-moves-phone.png') });
  await checkAxe(solo, 'a same-device game with its move list (phone)');
  check(await square(solo, 'h4', '#solo').locator('.piece.light').count() === 1, 'the live board has the last move');
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
console.log('all game-ux browser scenarios passed');
