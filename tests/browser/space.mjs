// Browser scenarios for the two space rule sets, run by tests/tests/browser.rs:
//
//   node tests/browser/space.mjs <base-url> <artifact-dir>
//
// Space Mode: a host creates a `space` lobby and a guest joins from a second
// page; both see the two wormholes and both sides' thruster charges; Dark
// plays a boost, Light steps through a wormhole (its exit is marked first),
// and Dark answers. Orbit: the same two open an orbit lobby and Dark moves;
// then a same-device game on the orbit board (drawn from the server's
// geometry), one move a side by clicks and by keyboard.
// Exits non-zero, with a message, on the first thing that goes wrong.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [base, artifacts] = process.argv.slice(2);
if (!base || !artifacts) {
  console.error('usage: node space.mjs <base-url> <artifact-dir>');
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

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
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
  return page;
}

const square = (page, name) => page.locator(`.square[data-square="${name}"]`);
const spot = (page, name) => page.locator(`.orbit-square[data-square="${name}"]`);

async function waitPiece(page, name, color) {
  await page.locator(`.square[data-square="${name}"] .piece.${color}`).waitFor();
}

async function waitStatus(page, id, pattern) {
  await page.waitForFunction(
    ([el, source, flags]) => new RegExp(source, flags).test(document.getElementById(el).textContent),
    [id, pattern.source, pattern.flags],
  );
}

async function marked(page, selector) {
  return page.$$eval(selector, (cells) => cells.map((c) => c.dataset.square).sort());
}

/** The squares diagonally next to `name` on the 8×8 board. */
function diagonals(name) {
  const f = name.charCodeAt(0) - 97;
  const r = Number(name.slice(1)) - 1;
  return [[-1, -1], [-1, 1], [1, -1], [1, 1]]
    .map(([df, dr]) => [f + df, r + dr])
    .filter(([a, b]) => a >= 0 && a < 8 && b >= 0 && b < 8)
    .map(([a, b]) => `${String.fromCharCode(97 + a)}${b + 1}`);
}

/** Plays whatever move the page offers first: a capturing piece if one must, else any piece. */
async function playSomeMove(page, color) {
  const mandatory = await marked(page, '.square.must-capture');
  const own = mandatory.length > 0 ? mandatory
    : await page.$$eval(`.square .piece.${color}`, (discs) => discs.map((d) => d.parentElement.dataset.square));
  for (const from of own) {
    await square(page, from).click();
    let targets = await marked(page, '.square.target');
    if (targets.length === 0) continue;
    while (targets.length > 0) {
      await square(page, targets[0]).click();
      targets = await marked(page, '.square.target');
    }
    return from;
  }
  throw new Error(`no ${color} piece could move`);
}

try {
  step('space: the host creates a Space Mode lobby, the guest joins');
  const host = await newPage('host', { width: 1200, height: 900 });
  const guest = await newPage('guest', { width: 1000, height: 900 });
  await host.goto('/');
  await host.locator('#create-form').waitFor();
  const labels = await host.$$eval('#rule-set option', (options) => options.map((o) => `${o.value}=${o.textContent}`));
  check(labels.includes('space=Space Mode') && labels.includes('orbit=Space Checkers (orbit)'), `rule sets offered: ${labels}`);
  await host.selectOption('#rule-set', 'space');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  const link = new URL(await host.inputValue('#invite-link'));
  await guest.goto(link.pathname + link.search);
  await guest.click('#preview-join');
  await waitStatus(host, 'status', /^Your turn/);
  await waitStatus(guest, 'status', /to move/);
  check(/Space Mode/.test(await host.textContent('#room-meta')), 'the room names the rule set');

  step('space: both pages show the two wormholes and both sides\' charges');
  const holesByAttribute = (await host.$$eval('.square[data-wormhole]', (cells) => cells.map((c) => c.dataset.square))).sort();
  const wormholes = await host.$$eval('.square:has(.wormhole)', (cells) => cells.map((c) => c.dataset.square).sort());
  check(wormholes.length === 2, `two wormholes drawn: ${wormholes}`);
  check(wormholes.join() === holesByAttribute.join(), 'both wormhole squares name the square they lead to');
  check((await guest.$$eval('.square:has(.wormhole)', (c) => c.map((x) => x.dataset.square).sort())).join() === wormholes.join(),
    'the guest sees the same wormholes');
  const label = await square(host, wormholes[0]).getAttribute('aria-label');
  check(label.includes(`wormhole, linked to ${wormholes[1]}`), `a wormhole is announced: ${label}`);
  const boosts = async (page) => page.$$eval('.seat .boosts', (tags) => tags.map((t) => t.textContent.trim()));
  check((await boosts(host)).join() === '⚡ 3 boosts left,⚡ 3 boosts left', `charges shown: ${await boosts(host)}`);
  check((await boosts(guest)).length === 2, 'the guest sees both charges');
  const [low, high] = wormholes.sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  check(low.endsWith('4') && high.endsWith('5'), `the game starts with wormholes on rows 4 and 5: ${wormholes}`);

  step('space: stepping onto a wormhole marks its exit');
  const entryFrom = diagonals(low).find((sq) => sq.endsWith('3'));
  await square(host, entryFrom).click();
  check((await marked(host, '.square.target')).includes(low), `${low} is a target from ${entryFrom}`);
  check((await marked(host, '.square.exit')).join() === high, `the exit ${high} is marked`);
  await host.keyboard.press('Escape');
  check((await marked(host, '.square.exit')).length === 0, 'Escape clears the exit mark');

  step('space: Dark plays a thruster boost');
  const [boostFrom, boostTo] = low === 'd4' ? ['d2', 'f4'] : ['b2', 'd4'];
  await square(host, boostFrom).click();
  check((await marked(host, '.square.target.boost')).includes(boostTo), `${boostTo} is a boost target`);
  check((await square(host, boostTo).getAttribute('title')) === 'boost', 'a boost target is titled "boost"');
  await square(host, boostTo).click();
  await waitPiece(guest, boostTo, 'dark');
  await guest.waitForFunction(() => document.querySelector('#seat-top .boosts, #seat-bottom .boosts') !== null);
  const afterBoost = await guest.$$eval('.seat', (seats) => seats.map((s) => s.textContent));
  // Space Mode keeps American checkers' names: Black moves first.
  check(afterBoost.some((t) => /Black.*2 boosts left/.test(t)) && afterBoost.some((t) => /White.*3 boosts left/.test(t)),
    `Black (the first mover) has two charges left: ${afterBoost}`);

  step('space: Light steps into a wormhole and comes out of the other');
  await waitStatus(guest, 'status', /^Your turn/);
  const lightFrom = diagonals(high).find((sq) => sq.endsWith('6'));
  await square(guest, lightFrom).click();
  check((await marked(guest, '.square.exit')).join() === low, `Light's exit ${low} is marked`);
  await square(guest, high).click();
  await waitPiece(host, low, 'light');
  const last = await marked(host, '.square.last-move');
  check([lightFrom, high, low].every((sq) => last.includes(sq)), `the last move shows entrance and exit: ${last}`);

  step('space: Dark answers with any move');
  await waitStatus(host, 'status', /^Your turn/);
  await playSomeMove(host, 'dark');
  await waitStatus(guest, 'status', /^Your turn/);
  await host.waitForFunction(() => [...document.querySelectorAll('#moves li')]
    .flatMap((li) => li.textContent.trim().split(/\s+/)).filter(Boolean).length === 3);
  check((await guest.$$eval('.square:has(.wormhole)', (c) => c.length)) === 2, 'still two wormholes after they moved');
  await host.screenshot({ path: join(artifacts, 'space.png') });

  step('orbit: both leave; the host creates an orbit lobby (the empty board shows), the guest joins');
  await host.click('#leave');
  await host.locator('#home').waitFor();
  await guest.click('#leave');
  await guest.locator('#home').waitFor();
  await host.selectOption('#rule-set', 'orbit');
  await host.click('#create-button');
  await host.locator('#invite-panel').waitFor();
  await host.locator('.orbit-square').first().waitFor();
  check(await host.locator('.orbit-square').count() === 25, 'the host sees the empty orbit board while waiting');
  check(await host.locator('.orbit-square.dark, .orbit-square.light').count() === 0, 'with no pieces on it yet');
  const orbitLink = new URL(await host.inputValue('#invite-link'));
  await guest.goto(orbitLink.pathname + orbitLink.search);
  await guest.click('#preview-join');
  await waitStatus(host, 'status', /^Your turn/);
  // The host's state can arrive before the guest's page has drawn its own.
  await guest.locator('.orbit-square').first().waitFor();
  check(await guest.locator('.orbit-square').count() === 25, 'the guest sees the orbit board');
  check(/0 series points/.test(await host.textContent('#seat-bottom')), 'the seats show the series points');
  check(/on points/.test(await guest.textContent('#status')), 'the status gives the score in points');
  await spot(host, 'A2').click();
  await spot(host, 'B2').click();
  await guest.locator('.orbit-square.dark[data-square="B2"]').waitFor();
  await waitStatus(guest, 'status', /^Your turn/);
  await guest.screenshot({ path: join(artifacts, 'orbit-lobby.png') });
  await host.click('#leave');
  await guest.click('#leave');

  step('orbit: a same-device game on the orbit board');
  const solo = await newPage('orbit', { width: 1100, height: 900 });
  await solo.goto('/');
  await solo.locator('#solo-form').waitFor();
  await solo.selectOption('#solo-rule-set', 'orbit');
  await solo.click('#same-device-start');
  await waitStatus(solo, 'solo-status', /^Dark to move/);
  check(await solo.locator('.orbit-square').count() === 25, 'the orbit board has 25 squares');
  check(await solo.locator('.orbit-lines line').count() > 24, 'the lines are drawn');
  check(await solo.locator('.orbit-square.occupied').count() === 12, 'twelve pieces');
  check(await solo.locator('.board').count() === 0, 'no 8×8 board in the page');
  const points = await solo.$$eval('.seat .points', (tags) => tags.map((t) => t.textContent.trim()));
  check(points.length === 2 && points.every((p) => /^\d+ points? now$/.test(p)), `live points shown: ${points}`);
  check((await spot(solo, 'A3').getAttribute('aria-label')) === 'A3, dark piece', 'squares have labels');

  step('orbit: Dark moves A3 to the core by clicking');
  await spot(solo, 'A3').click();
  check((await marked(solo, '.orbit-square.target')).join() === 'B3,C', 'A3 may go to B3 or the core');
  await spot(solo, 'C').click();
  await waitStatus(solo, 'solo-status', /^Light to move/);
  check(await solo.locator('.orbit-square.dark[data-square="C"]').count() === 1, 'the piece is in the core');
  check((await marked(solo, '.orbit-square.last-move')).join() === 'A3,B3,C', 'the last move is highlighted');

  step('orbit: Light moves A8 to B8 by keyboard');
  await spot(solo, 'A8').focus();
  await solo.keyboard.press('Enter');
  check((await marked(solo, '.orbit-square.target')).join() === 'B8', 'A8 is selected by keyboard');
  await solo.keyboard.press('ArrowUp');
  const moved = await solo.evaluate(() => document.activeElement?.dataset?.square);
  check(moved && moved !== 'A8', `an arrow key moves the cursor (to ${moved})`);
  await spot(solo, 'B8').focus();
  await solo.keyboard.press('Enter');
  await waitStatus(solo, 'solo-status', /^Dark to move/);
  check(await solo.locator('.orbit-square.light[data-square="B8"]').count() === 1, 'the Light piece is on B8');
  const orbitMoves = await solo.$$eval('#solo-moves li', (items) => items.map((i) => i.textContent.replace(/\s+/g, ' ')));
  check(orbitMoves.join() === 'A3-C A8-B8', `the moves are listed: ${orbitMoves}`);

  step('orbit: two moves to the same square are offered as a choice');
  const choice = await solo.evaluate(async () => {
    const { orbitClick } = await import('/assets/orbit.js');
    const moves = [
      { notation: 'A1-B1-B2-B3-B4-B5-B6', path: ['A1', 'B1', 'B2', 'B3', 'B4', 'B5', 'B6'], captures: [] },
      { notation: 'A1-B1-B12-B11-B10-B9-B8-B7-B6', path: ['A1', 'B1', 'B12', 'B11', 'B10', 'B9', 'B8', 'B7', 'B6'], captures: [] },
      { notation: 'A1-B1', path: ['A1', 'B1'], captures: [] },
    ];
    const pick = orbitClick(moves, 'A1', 'B6');
    const single = orbitClick(moves, 'A1', 'B1');
    return { choices: pick.choices.length, play: pick.play, single: single.play?.notation };
  });
  check(choice.choices === 2 && choice.play === null && choice.single === 'A1-B1', `choice: ${JSON.stringify(choice)}`);
  await solo.screenshot({ path: join(artifacts, 'orbit.png') });
} catch (error) {
  failures.push(error.stack ?? String(error));
  for (const [i, context] of browser.contexts().entries()) {
    for (const page of context.pages()) {
      await page.screenshot({ path: join(artifacts, `space-failure-${i}.png`) }).catch(() => {});
    }
  }
} finally {
  await browser.close();
}

if (failures.length > 0) {
  console.error(failures.join('\n'));
  process.exit(1);
}
console.log('all space browser scenarios passed');
