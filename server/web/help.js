// help.js — a short "how to play" for each rule set, written for this
// client from rules/RULES.md (what the server enforces). Shown in a
// <details> panel beside the board; the server decides every move anyway.
// Also how correspondence games work (the claim time, the expiry).

import { ruleSetLabel, sideName } from './protocol.js';

/** The shared basics of the 8×8 games, in a rule set's side names. */
function basics(ruleSet) {
  const first = sideName(ruleSet, 'dark');
  return [
    `${first} moves first. Pieces stand on the dark squares only and move diagonally.`,
    'A man steps one square forward onto an empty square.',
    'Taking is compulsory: jump an enemy piece next to yours onto the empty square behind it. '
      + 'If the same piece can jump again, it must; the whole chain is one move. '
      + 'Pieces you must move are ringed in red on your turn.',
    'A man that finishes its move on the far row becomes a king.',
    'You lose when it is your turn and you have no pieces left, or none that can move.',
  ];
}

const DRAWS_AMERICAN = 'Draws: by agreement (offer one on your turn), when the same position comes up a third time with the same side to move, or after 40 moves each with no capture and no man moved.';
const DRAWS_OTHER = 'Draws: by agreement (offer one on your turn), when the same position comes up a third time, or after 20 moves in a row (counting both sides) made only by kings without a capture.';
/** What a lobby created with the federation draw rules changes (rules/RULES.md). */
const FEDERATION = {
  brazilian: 'With federation draw rules (a lobby option): 25 moves each of kings only; a lone king against three pieces, 16 moves each; against one or two, 5 moves each.',
  russian: 'With federation draw rules (a lobby option): 15 moves each of kings only; three kings against one must win within 15 of their moves; with kings on both sides and 4–7 pieces, no capture or crowning for 30 (4–5 pieces) or 60 (6–7) moves each draws.',
  italian: 'With federation draw rules (a lobby option): 40 moves each of kings only.',
};
const FLYING = 'Kings fly: they move any distance along an empty diagonal, and take a piece at any distance when the squares between are empty, landing on any free square beyond it.';

const TEXTS = {
  american: () => [
    ...basics('american'),
    'Men take forward only. Kings move and take one square at a time, forwards and backwards.',
    'When several captures are possible you may choose any of them, but a chain you start must be finished. Becoming a king ends the move.',
    DRAWS_AMERICAN,
  ],
  brazilian: () => [
    ...basics('brazilian'),
    'Men may take backwards as well as forwards.',
    FLYING,
    'You must make the capture that takes the most pieces (a king counts as one).',
    'A man that reaches the far row in the middle of a chain carries on as a man; it is crowned only if the move ends there.',
    DRAWS_OTHER,
    FEDERATION.brazilian,
  ],
  russian: () => [
    ...basics('russian'),
    'Men may take backwards as well as forwards.',
    FLYING,
    'You may choose any capture, not only the largest.',
    'A man that reaches the far row during a chain is crowned at once and carries on taking as a king.',
    DRAWS_OTHER,
    FEDERATION.russian,
  ],
  spanish: () => [
    ...basics('spanish'),
    'The board is turned: the corner square on your left is light.',
    'Men take forward only.',
    FLYING,
    'You must make the capture that takes the most pieces.',
    DRAWS_OTHER,
  ],
  italian: () => [
    ...basics('italian'),
    'The board is turned: the corner square on your left is light.',
    'Men take forward only, and a man may never take a king. Kings move and take one square at a time.',
    'Among captures you must take the most pieces; if still tied, the most kings; then a capture by a king before one by a man; then the one that meets a king earliest.',
    DRAWS_OTHER,
    FEDERATION.italian,
  ],
  thai: () => [
    ...basics('thai'),
    'Each side starts with eight men on its two nearest rows.',
    'Men take forward only.',
    FLYING,
    'You may choose any capture.',
    DRAWS_OTHER,
  ],
  space: () => [
    ...basics('space'),
    'Everything else is as in American checkers (men take forward, kings one step, any capture may be chosen), plus two space features:',
    'Wormholes (dashed purple rings): two linked squares. A piece that lands on one comes out of the other if it is empty, and a capture chain goes on from there. After each of White\'s moves both wormholes jump to new empty squares. A ⤴ mark shows where a piece would come out.',
    'Thruster boosts (⚡): three charges a side for the whole game. A boost hops a piece over one of your own pieces next to it onto the empty square just beyond, capturing nothing; it is a whole move. Men boost forward only. You cannot boost while a capture is available. Boost landings are marked with an orange diamond.',
    'Squares carry American numbers, as in the move list.',
    DRAWS_AMERICAN,
  ],
  orbit: () => [
    'A different game on 25 points: the core C, the inner ring B1–B12 and the outer ring A1–A12, joined by twelve rays. Dark moves first; each side has six pieces, all alike.',
    'A piece never jumps: every point it passes or stops on must be empty.',
    'From the outer ring a piece goes in along its ray to the inner ring or on to the core, or leaves the ray sideways onto the inner ring one or two points round (a diagonal exit; not on your very first move). From the inner ring it can only go back out along its ray; from the core, out along any ray.',
    'Boosts: when a diagonal exit stops on an inner point whose outer point holds one of your pieces, the piece is pushed on two more points round the ring, up to three times.',
    'Captures: a diagonal exit takes any enemy piece on the inner points either side of where it stops.',
    'The game ends when a side has lost three pieces, when a side has all its pieces in a row on the inner ring, after 200 plies, or when neither side can move. A side that cannot move passes.',
    'Points: 3 for having all your pieces in a row on the inner ring, or 1 for all but one; and 2 more when your opponent has at most three pieces on the inner ring. More points wins the game; a series is won on total points.',
    'The seats show each side’s points as the board stands (“2 points now”): at the start both sides have 2, since neither has four pieces on the inner ring yet. The note under the status repeats both sides’ points, as the server counts them, and how they are counted.',
  ],
};

/** Fills a <details> element with the help for `ruleSet` (once per rule set). */
export function rulesHelp(details, ruleSet) {
  if (!details || details.dataset.ruleSet === ruleSet) return;
  details.dataset.ruleSet = ruleSet;
  const summary = document.createElement('summary');
  summary.textContent = `How to play ${ruleSetLabel(ruleSet)}`;
  const list = document.createElement('ul');
  for (const text of (TEXTS[ruleSet] ?? (() => []))()) {
    const item = document.createElement('li');
    item.textContent = text;
    list.append(item);
  }
  details.replaceChildren(summary, list);
}

/** How correspondence games work, for the create form and correspondence rooms. */
export const CORRESPONDENCE_HELP = [
  'In a correspondence game each player moves whenever they can: close the page, come back later. '
    + 'Your games are listed under “My games” on the home page, and the tab’s title tells you when it is your move.',
  'The series starts as soon as both seats are taken, even if the creator is away. The creator of the lobby moves first.',
  'No clock runs out on you. But once the side to move has let the claim time pass (2 days after the last move, '
    + 'unless this server says otherwise), the opponent may claim the game: “Claim win” wins it.',
  'A lobby in which nobody moves for 7 days expires: the game and the series end with no winner, and any stakes are returned.',
];

/** Fills a <details> element with the correspondence help (once). */
export function correspondenceHelp(details) {
  if (!details || details.dataset.filled) return;
  details.dataset.filled = 'yes';
  const summary = document.createElement('summary');
  summary.textContent = 'How correspondence games work';
  const list = document.createElement('ul');
  for (const text of CORRESPONDENCE_HELP) {
    const item = document.createElement('li');
    item.textContent = text;
    list.append(item);
  }
  details.replaceChildren(summary, list);
}
