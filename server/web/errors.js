// errors.js — a sentence for people for every error code of protocol v1
// (PROTOCOL.md §15). The server's own `message` is for logs; we branch on
// `code` only, and fall back to a generic sentence for codes added later.

const MESSAGES = {
  malformed_message: 'The server could not read a message from this page. Please reload.',
  unknown_message_type: 'The server does not support that action yet.',
  message_too_large: 'That message was too large to send.',
  unsupported_version: 'This page is out of date for the server. Please reload.',
  hello_required: 'Still connecting — try again in a moment.',
  already_greeted: 'Already connected.',
  invalid_token: 'Your guest identity expired; you are now a new guest.',
  invalid_options: 'Those lobby options are not allowed: choose a series of 1, 3, 5 or 7 rounds, and a stake of 0 (free) or 10 to 1,000 Bold Points.',
  // Deliberately the same words for a code nobody uses and an invite-only
  // lobby asked for without its invite: the server does not tell them apart
  // (§11), and neither may the page.
  unknown_lobby: 'No lobby has that code, or it needs its invite link. Check the code, or open the full link you were sent.',
  lobby_full: 'This lobby already has two players.',
  // No longer sent: an invite-only lobby without its invite answers unknown_lobby.
  invite_required: 'This lobby is invite-only: open the full invite link you were sent.',
  already_in_lobby: 'You are already in a lobby. Leave it first.',
  not_in_lobby: 'You are not in a lobby any more.',
  spectators_cannot_act: 'Spectators can watch, but only the players can do that.',
  not_your_turn: 'It is not your turn.',
  illegal_move: 'That move is not legal here.',
  no_game_in_progress: 'No game is being played right now.',
  no_draw_offer: 'There is no draw offer to answer.',
  draw_already_offered: 'A draw offer is already standing.',
  not_host: 'Only the host can end the match.',
  not_now: 'That is not possible at this point of the match.',
  rate_limited: 'Too many actions at once — slow down a little.',
  account_required: 'Sign in to play for Bold Points',
  insufficient_funds: 'Not enough Bold Points to start this series.',
  storage_unavailable: 'The server could not confirm that yet; it may still go through. The board updates when it knows.',
  room_unavailable: 'This game is moving to another server and could not be reached just now. Try again in a moment.',
  claim_too_early: 'Too early to claim this game: your opponent still has time to move.',
  computer_busy: 'The computer has too many games to answer quickly just now, so no game was started. Try again in a minute, or play someone on this device.',
  internal_error: 'Something went wrong on the server. Try again.',
  // Not a server code: connection.js gives it to a request whose connection
  // dropped before any answer, when the request is not safe to send again.
  // Not server codes either: app.js's words for a code that cannot be one
  // (never sent), and for a lobby this device was in that the server no
  // longer has.
  malformed_code: 'Lobby codes are 8 characters: letters and the digits 2 to 9 (no 0, 1, I or O). Check the code you were given.',
  lobby_gone: 'That lobby is gone: the server no longer has it (it was restarted without keeping its games, or the lobby closed).',
  connection_lost: 'The connection dropped before the server answered. The board shows what went through; try again if needed.',
  // connection.js's own too: a game action asked for while the page is not
  // connected is refused, not sent later; and the actions still unanswered
  // when the room turned out to be gone end with `room_gone` (never shown:
  // the page says the game is gone).
  offline: 'Not connected to the server just now, so that was not sent. Try again once the page is back online.',
  room_gone: 'That lobby is gone, so nothing more can be done in it.',
};

/** Every code this client knows, for tests and completeness checks. */
export const KNOWN_ERROR_CODES = Object.freeze(Object.keys(MESSAGES));

/**
 * Codes whose server `message` says what people need to know: who is short
 * of points; how long until a game may be claimed; whether the computer is
 * busy (and how slow it would be) or not running at all.
 */
const SHOW_SERVER_MESSAGE = {
  insufficient_funds: (text) => text,
  // "busy … about 12 s each" or "not available right now …": both worth reading.
  computer_busy: (text) => `${text.charAt(0).toUpperCase()}${text.slice(1)}. No game was started; you can also play someone on this device.`,
  claim_too_early: (text) => `Too early to claim: ${text}.`,
};

/**
 * A human sentence for an error code (unknown codes included). For a few
 * codes the server's own `message` is shown when there is one.
 */
export function describeError(code, serverMessage) {
  if (Object.hasOwn(SHOW_SERVER_MESSAGE, code) && serverMessage) return SHOW_SERVER_MESSAGE[code](serverMessage);
  return MESSAGES[code] ?? `The server refused that (${code}).`;
}
