// protocol.js — builders for the client messages (PROTOCOL.md §5; protocol 2
// sends the same ones, §21). Each returns the message without `seq`;
// connection.js numbers them.

/**
 * The subprotocols this page offers, preferred first: protocol 2, whose room
 * arrives as a snapshot and then events, and protocol 1 for a server without
 * it (an older instance behind the same balancer during a rolling update).
 */
export const SUBPROTOCOLS = ['jumpgate.v2.json', 'jumpgate.v1.json'];

/** The protocol version a subprotocol the server chose speaks, or 0 for one this page does not. */
export function protocolOf(subprotocol) {
  return { 'jumpgate.v2.json': 2, 'jumpgate.v1.json': 1 }[subprotocol] ?? 0;
}

export const CLIENT_NAME = 'jumpgate-web/0.2';

export const RULE_SETS = [
  { value: 'american', label: 'American checkers' },
  { value: 'brazilian', label: 'Brazilian draughts' },
  { value: 'russian', label: 'Russian draughts' },
  { value: 'spanish', label: 'Spanish draughts' },
  { value: 'italian', label: 'Italian draughts' },
  { value: 'thai', label: 'Thai checkers' },
  { value: 'space', label: 'Space Mode' },
  { value: 'orbit', label: 'Space Checkers (orbit)' },
];

export const SERIES_LENGTHS = [1, 3, 5, 7];

/**
 * A series length in a few words, short enough for a phone's line: "One
 * game", "Best of 3", or on the orbit board "3 games on points".
 * (PROTOCOL.md §11: a drawn single game is played once more.)
 */
export function seriesLabel(length, ruleSet) {
  if (ruleSet === 'orbit') return length === 1 ? 'One game on points' : `${length} games on points`;
  return length === 1 ? 'One game' : `Best of ${length}`;
}

/** What a series length means, for the create form's hint. */
export function seriesHint(length, ruleSet) {
  if (ruleSet === 'orbit') {
    return length === 1 ? 'One game; the side with more points wins.'
      : `${length} games; the most points in total wins.`;
  }
  if (length === 1) return 'One game. A draw is played again, once; a second draw draws the match.';
  return `First to ${Math.floor(length / 2) + 1} wins. Draws do not count, up to ${2 * length} games.`;
}

export function ruleSetLabel(value) {
  return RULE_SETS.find((r) => r.value === value)?.label ?? `${value} (not supported by this page)`;
}

/** `hello` in `protocol`, with the kept token and a guest's chosen name when there are. */
export function hello(protocol, token, name) {
  const message = { type: 'hello', protocol, client: CLIENT_NAME };
  if (token) message.token = token;
  if (name) message.name = name;
  return message;
}

/** The longest display name the server keeps (PROTOCOL.md §3, Names). */
export const MAX_NAME_CHARS = 24;

/** Rule sets whose first mover is traditionally White (the others: Black). */
const WHITE_FIRST = new Set(['brazilian', 'russian', 'spanish', 'italian']);

export const whiteMovesFirst = (ruleSet) => WHITE_FIRST.has(ruleSet);

/**
 * What a rule set calls a side (the wire always says `dark` for the first
 * mover): Black and White in the 8×8 games, in their traditional order;
 * Dark and Light on the orbit board, which has no tradition.
 */
export function sideName(ruleSet, color) {
  if (ruleSet === 'orbit') return color === 'dark' ? 'Dark' : 'Light';
  const first = whiteMovesFirst(ruleSet) ? 'White' : 'Black';
  const second = first === 'White' ? 'Black' : 'White';
  return color === 'dark' ? first : second;
}

/** The shade a side's pieces are drawn in: `dark` or `light`. */
export function pieceShade(ruleSet, color) {
  if (!whiteMovesFirst(ruleSet)) return color;
  return color === 'dark' ? 'light' : 'dark';
}

/** Bold Points a staked lobby may ask of each player (PROTOCOL.md §13). */
export const STAKE_MIN = 10;
export const STAKE_MAX = 1000;

/** How fast a lobby is played (`create_lobby.pace`; absent means live). */
export const PACES = [
  { value: 'live', label: 'Live — 45 seconds a move' },
  { value: 'correspondence', label: 'Correspondence — days per move' },
];

export function paceLabel(value) {
  return value === 'correspondence' ? 'Correspondence' : 'Live';
}

export function createLobby({ ruleSet, seriesLength, inviteOnly, stake = 0, pace = 'live', drawRules = 'standard' }) {
  const message = { type: 'create_lobby', rule_set: ruleSet, series_length: seriesLength, invite_only: inviteOnly };
  if (stake > 0) message.stake = stake;
  if (pace === 'correspondence') message.pace = pace;
  if (drawRules === 'federation') message.draw_rules = drawRules;
  return message;
}

function withInvite(message, invite) {
  if (invite) message.invite = invite;
  return message;
}

export const joinLobby = (code, invite) => withInvite({ type: 'join_lobby', code }, invite);
export const watch = (code, invite) => withInvite({ type: 'watch', code }, invite);
export const leave = () => ({ type: 'leave' });
export const movePath = (path) => ({ type: 'move', path: [...path] });

/**
 * The message that plays a move picked from `legal_moves`: its whole path,
 * which names one move on every board (on the orbit board, every square
 * passed through).
 */
export const playMove = (move) => movePath(move.path);
export const offerDraw = () => ({ type: 'offer_draw' });
export const acceptDraw = () => ({ type: 'accept_draw' });
export const declineDraw = () => ({ type: 'decline_draw' });
export const resign = () => ({ type: 'resign' });
export const nextRound = () => ({ type: 'next_round' });
export const rematch = () => ({ type: 'rematch' });
export const endMatch = () => ({ type: 'end_match' });
export const resync = (since) => ({ type: 'resync', since });
/** Correspondence: win the game because the side to move let the claim time pass. */
export const claimForfeit = () => ({ type: 'claim_forfeit' });
/** What a lobby is, before joining it; answered by `lobby_info`. */
export const lobbyInfo = (code, invite) => withInvite({ type: 'lobby_info', code }, invite);
/** Your unfinished lobbies and solo game; answered by `my_games`. */
export const myGames = () => ({ type: 'my_games' });
export const ping = () => ({ type: 'ping' });

/** The computer's levels, weakest first (PROTOCOL.md, solo play). */
export const BOT_LEVELS = [
  { value: 'tamer', label: 'Tamer' },
  { value: 'driver', label: 'Driver' },
  { value: 'warden', label: 'Warden' },
  { value: 'executive', label: 'Executive' },
];

export function levelLabel(value) {
  return BOT_LEVELS.find((l) => l.value === value)?.label ?? String(value);
}

/** A game against the computer (`mode: 'computer'`) or two people on one device. */
export function startSolo({ ruleSet, mode, level, ranked = false }) {
  const message = { type: 'start_solo', rule_set: ruleSet, mode, ranked: Boolean(ranked) };
  if (mode === 'computer' && level) message.level = level;
  return message;
}

export const undo = () => ({ type: 'undo' });
export const resumeSolo = () => ({ type: 'resume_solo' });
