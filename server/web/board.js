// board.js — the board view: an 8×8 grid of buttons drawn from the wire
// frame (PROTOCOL.md §8). Squares are named a1…h8 as seen from Dark;
// Italian and Spanish boards are mirrored (a1 is not a playing square), and
// the board turns round for whoever plays Light. The view only draws and
// reports what the person points at; game.js decides what that means.
// Space Mode adds its two wormholes (a ring on each square) and marks for
// thruster boosts and wormhole exits among the targets.

const FILES = 'abcdefgh';
const MIRRORED = new Set(['italian', 'spanish']);

export const isMirrored = (ruleSet) => MIRRORED.has(ruleSet);

/** Whether the square at file index f, rank index r (0-based) is played on. */
export function isPlayable(ruleSet, f, r) {
  return ((f + r) % 2 === 0) !== isMirrored(ruleSet);
}

export const squareName = (f, r) => `${FILES[f]}${r + 1}`;

/**
 * The rule set's own number for a square (rules/RULES.md), or null for
 * the algebraic rule sets and for squares not played on.
 */
export function squareNumber(ruleSet, f, r) {
  if (!isPlayable(ruleSet, f, r)) return null;
  const inRow = (from) => {
    const files = [];
    for (let i = 0; i < 8; i += 1) if (isPlayable(ruleSet, i, r)) files.push(i);
    return from === 'right' ? files.reverse().indexOf(f) : files.indexOf(f);
  };
  switch (ruleSet) {
    case 'american':
    case 'spanish':
      // From the first player's bottom-right corner, right to left, upwards.
      return r * 4 + inRow('right') + 1;
    case 'italian':
    case 'thai':
      // From the top-left corner, left to right, downwards.
      return (7 - r) * 4 + inRow('left') + 1;
    default:
      return null;
  }
}

const NONE = new Set();

function parseSquare(name) {
  return { f: FILES.indexOf(name[0]), r: Number(name.slice(1)) - 1 };
}

export class BoardView {
  /**
   * @param {HTMLElement} container
   * @param {{ onActivate(square: string): void, onClear(): void }} handlers
   */
  constructor(container, handlers) {
    this.handlers = handlers;
    this.element = document.createElement('div');
    this.element.className = 'board';
    this.element.setAttribute('role', 'group');
    this.element.setAttribute('aria-label', 'Board');
    this.cells = new Map(); // square name -> button
    this.cursor = { row: 7, col: 0 };
    this.ruleSet = null;
    this.flipped = false;
    container.append(this.element);

    this.element.addEventListener('keydown', (e) => this.onKey(e));
    this.element.addEventListener('pointerdown', (e) => this.onPointerDown(e));
    this.element.addEventListener('pointerup', (e) => this.onPointerUp(e));
    // Activation comes from pointer and key events; stop the buttons' own
    // click so that nothing is activated twice.
    this.element.addEventListener('click', (e) => e.preventDefault());
  }

  /** Where a square is drawn, given the board's turn. */
  place(f, r) {
    return this.flipped ? { row: r, col: 7 - f } : { row: 7 - r, col: f };
  }

  squareAt(row, col) {
    return this.flipped ? squareName(7 - col, row) : squareName(col, 7 - row);
  }

  build(ruleSet, flipped) {
    this.ruleSet = ruleSet;
    this.flipped = flipped;
    this.element.replaceChildren();
    this.cells.clear();
    this.element.classList.toggle('flipped', flipped);
    for (let row = 0; row < 8; row += 1) {
      for (let col = 0; col < 8; col += 1) {
        const square = this.squareAt(row, col);
        const { f, r } = parseSquare(square);
        const cell = document.createElement('button');
        cell.type = 'button';
        cell.className = isPlayable(ruleSet, f, r) ? 'square dark-square' : 'square light-square';
        cell.dataset.square = square;
        cell.tabIndex = -1;
        const number = squareNumber(ruleSet, f, r);
        if (number !== null) {
          const label = document.createElement('span');
          label.className = 'number';
          label.textContent = String(number);
          label.setAttribute('aria-hidden', 'true');
          cell.append(label);
        }
        if (row === 7) cell.append(coordinate('file', FILES[f]));
        if (col === 0) cell.append(coordinate('rank', String(r + 1)));
        this.element.append(cell);
        this.cells.set(square, cell);
      }
    }
    this.moveCursor(0, 0, false);
  }

  /**
   * Draws a position. `marks` holds sets of square names: selected, path
   * (squares chosen so far), targets (where the selection may go next),
   * captures (pieces the candidate moves take), mustCapture, lastMove, and
   * for Space Mode boosts (targets reached by a thruster boost) and exits
   * (where a piece comes out of a wormhole). `space` is the game's Space
   * Mode view (wormholes and charges), if any.
   */
  render({ ruleSet, flipped, pieces, marks, space = null }) {
    if (ruleSet !== this.ruleSet || flipped !== this.flipped) this.build(ruleSet, flipped);
    const bySquare = new Map(pieces.map((p) => [p.square, p]));
    const wormholes = space?.wormholes ?? [];
    for (const [square, cell] of this.cells) {
      const hole = wormholes.indexOf(square);
      let ring = cell.querySelector('.wormhole');
      if (hole >= 0 && !ring) {
        ring = document.createElement('span');
        ring.className = 'wormhole';
        ring.setAttribute('aria-hidden', 'true');
        cell.prepend(ring);
      } else if (hole < 0 && ring) {
        ring.remove();
      }
      if (hole >= 0) {
        ring.title = `wormhole, linked to ${wormholes[1 - hole]}`;
        cell.dataset.wormhole = wormholes[1 - hole];
      } else {
        delete cell.dataset.wormhole;
      }
      const piece = bySquare.get(square);
      let disc = cell.querySelector('.piece');
      if (piece) {
        if (!disc) {
          disc = document.createElement('span');
          disc.setAttribute('aria-hidden', 'true');
          cell.append(disc);
        }
        disc.className = `piece ${piece.color}${piece.king ? ' king' : ''}`;
      } else if (disc) {
        disc.remove();
      }
      const flags = [];
      const toggle = (cls, set, words) => {
        const on = set.has(square);
        cell.classList.toggle(cls, on);
        if (on) flags.push(words);
      };
      toggle('selected', marks.selected, 'selected');
      toggle('on-path', marks.path, 'on the chosen path');
      toggle('target', marks.targets, 'can move here');
      toggle('capture', marks.captures, 'will be captured');
      toggle('must-capture', marks.mustCapture, 'must capture');
      toggle('boost', marks.boosts ?? NONE, 'by thruster boost');
      toggle('exit', marks.exits ?? NONE, 'wormhole exit, the piece comes out here');
      toggle('last-move', marks.lastMove, 'last move');
      if (cell.classList.contains('boost') && cell.classList.contains('target')) cell.title = 'boost';
      else if (cell.classList.contains('exit')) cell.title = 'wormhole exit';
      else cell.removeAttribute('title');
      if (hole >= 0) flags.unshift(`wormhole, linked to ${wormholes[1 - hole]}`);
      const what = piece ? `${piece.color} ${piece.king ? 'king' : 'man'}` : 'empty';
      const { f, r } = parseSquare(square);
      const playable = isPlayable(ruleSet, f, r);
      const number = squareNumber(ruleSet, f, r);
      const parts = [square, playable ? what : 'not a playing square'];
      if (number !== null) parts.push(`square ${number}`);
      cell.setAttribute('aria-label', [...parts, ...flags].join(', '));
    }
  }

  moveCursor(dRow, dCol, focus = true) {
    const row = Math.min(7, Math.max(0, this.cursor.row + dRow));
    const col = Math.min(7, Math.max(0, this.cursor.col + dCol));
    this.setCursor(this.squareAt(row, col), focus);
  }

  setCursor(square, focus = true) {
    const cell = this.cells.get(square);
    if (!cell) return;
    for (const other of this.cells.values()) other.tabIndex = -1;
    cell.tabIndex = 0;
    const { f, r } = parseSquare(square);
    this.cursor = this.place(f, r);
    if (focus) cell.focus();
  }

  onKey(event) {
    const steps = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (steps[event.key]) {
      event.preventDefault();
      this.moveCursor(...steps[event.key]);
    } else if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      this.handlers.onActivate(this.squareAt(this.cursor.row, this.cursor.col));
    } else if (event.key === 'Escape') {
      event.preventDefault();
      this.handlers.onClear();
    }
  }

  cellFromPoint(event) {
    const hit = document.elementFromPoint(event.clientX, event.clientY);
    return hit?.closest?.('.square') ?? null;
  }

  onPointerDown(event) {
    if (event.button !== 0) return;
    const cell = event.target.closest('.square');
    if (!cell) return;
    this.pressed = cell.dataset.square;
    this.setCursor(cell.dataset.square);
    this.handlers.onActivate(cell.dataset.square);
  }

  onPointerUp(event) {
    const from = this.pressed;
    this.pressed = null;
    const cell = this.cellFromPoint(event);
    // A drag: released over another square, which counts as a second click.
    if (from && cell && cell.dataset.square !== from) {
      this.setCursor(cell.dataset.square);
      this.handlers.onActivate(cell.dataset.square);
    }
  }
}

function coordinate(kind, text) {
  const label = document.createElement('span');
  label.className = `coordinate ${kind}`;
  label.textContent = text;
  label.setAttribute('aria-hidden', 'true');
  return label;
}
