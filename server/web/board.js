// board.js — the board view: an 8×8 grid of buttons drawn from the wire
// frame (PROTOCOL.md §8). Squares are named a1…h8 as seen from Dark;
// Italian and Spanish boards are mirrored (a1 is not a playing square), and
// the board turns round for whoever plays Light. The view only draws and
// reports what the person points at; game.js decides what that means.
// Space Mode adds its two wormholes (a ring on each square) and marks for
// thruster boosts and wormhole exits among the targets. A piece can be
// moved by two clicks, by keyboard, or dragged: while dragged it follows
// the pointer, drawn over the page, and nothing else on the page moves.
// A finger would hide the piece it drags, so a touch drag draws the piece
// a square above the fingertip and marks the square under it, where the
// piece lands (as lichess does); a mouse drag keeps the piece under the
// pointer. The arrow keys move between playing squares only. The view has
// its own polite live region: it says what a selection allows and, once the
// board shows it, the move just made.

import { sideName, whiteMovesFirst } from './protocol.js';

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
    case 'space':
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
    // The column that up and down keep to, zigzagging beside it on the
    // diagonal board; set by left, right and by pointing at a square.
    this.column = 0;
    this.ruleSet = null;
    this.spoken = { selection: '', pending: null };
    this.live = document.createElement('p');
    this.live.className = 'sr-only board-announce';
    this.live.setAttribute('aria-live', 'polite');
    this.flipped = false;
    container.append(this.element);

    this.element.addEventListener('keydown', (e) => this.onKey(e));
    this.element.addEventListener('pointerdown', (e) => this.onPointerDown(e));
    this.element.addEventListener('pointermove', (e) => this.onPointerMove(e));
    this.element.addEventListener('pointerup', (e) => this.onPointerUp(e));
    this.element.addEventListener('pointercancel', () => this.endDrag());
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
    this.element.replaceChildren(this.live);
    this.cells.clear();
    this.element.classList.toggle('flipped', flipped);
    // The first mover's pieces are drawn white where tradition has White first.
    this.element.classList.toggle('white-first', whiteMovesFirst(ruleSet));
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
        this.element.append(cell);
        this.cells.set(square, cell);
      }
    }
    // Coordinates sit over the board, outside the squares, so that a
    // square's name for assistive technology is exactly its label.
    for (let i = 0; i < 8; i += 1) {
      const rank = parseSquare(this.squareAt(i, 0));
      this.element.append(coordinate('rank', String(rank.r + 1), i, isPlayable(ruleSet, rank.f, rank.r)));
      const file = parseSquare(this.squareAt(7, i));
      this.element.append(coordinate('file', FILES[file.f], i, isPlayable(ruleSet, file.f, file.r)));
    }
    this.cursor = { row: 7, col: 0 };
    this.column = 0;
    this.moveCursor(0, 0, false);
  }

  playableAt(row, col) {
    const { f, r } = parseSquare(this.squareAt(row, col));
    return isPlayable(this.ruleSet, f, r);
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
      const what = piece ? `${sideName(ruleSet, piece.color).toLowerCase()} ${piece.king ? 'king' : 'man'}` : 'empty';
      const { f, r } = parseSquare(square);
      const playable = isPlayable(ruleSet, f, r);
      const number = squareNumber(ruleSet, f, r);
      const parts = [square, playable ? what : 'not a playing square'];
      if (number !== null) parts.push(`square ${number}`);
      cell.setAttribute('aria-label', [...parts, ...flags].join(', '));
    }
    this.speak(marks);
  }

  /**
   * Moves the keyboard cursor one step to a playing square: left and right
   * to the next one along the row, up and down to the one in the next row
   * nearest the column kept (towards the board's middle on a tie). At an
   * edge it stays; from a square not played on (reached by pointing) the
   * first step lands on a playing square.
   */
  moveCursor(dRow, dCol, focus = true) {
    let { row, col } = this.cursor;
    if (dCol !== 0) {
      for (let c = col + dCol; c >= 0 && c < 8; c += dCol) {
        if (this.playableAt(row, c)) {
          col = c;
          break;
        }
      }
      this.column = col;
    } else {
      const next = Math.min(7, Math.max(0, row + dRow));
      if (next !== row || !this.playableAt(row, col)) {
        const cols = [0, 1, 2, 3, 4, 5, 6, 7].filter((c) => this.playableAt(next, c));
        const cost = (c) => Math.abs(c - this.column) * 16 + Math.abs(c - 3.5);
        col = cols.reduce((best, c) => (cost(c) < cost(best) ? c : best));
        row = next;
      }
    }
    this.setCursor(this.squareAt(row, col), focus, false);
  }

  setCursor(square, focus = true, keepColumn = false) {
    const cell = this.cells.get(square);
    if (!cell) return;
    for (const other of this.cells.values()) other.tabIndex = -1;
    cell.tabIndex = 0;
    const { f, r } = parseSquare(square);
    this.cursor = this.place(f, r);
    if (!keepColumn) this.column = this.cursor.col;
    if (focus) cell.focus();
  }

  /** Passes a square pointed at or chosen by key on to game.js. */
  activate(square) {
    this.activated = square;
    this.handlers.onActivate(square);
  }

  /**
   * Tells screen readers what changed: a new selection and where it may
   * go, a selection let go, and a move of this page's once the board
   * shows it played (what the other side plays, game.js announces).
   */
  speak(marks) {
    const [selected] = marks.selected;
    const path = [...marks.path];
    const targets = [...marks.targets].sort();
    const key = selected ? [selected, ...path, '>', ...targets].join(' ') : '';
    const previous = this.spoken.selection;
    this.spoken.selection = key;
    let words = '';
    if (key && key !== previous) {
      if (path.length > 0 && targets.length === 0) {
        // A whole path chosen: the move is on its way, said when the board shows it.
        this.spoken.pending = { from: selected, to: path.at(-1) };
      } else {
        const count = `${targets.length} ${targets.length === 1 ? 'move' : 'moves'}`;
        const at = path.length > 0 ? `${selected} to ${path.join(' to ')}, ` : `${selected} selected, `;
        words = targets.length > 0 ? `${at}${count}: ${targets.join(', ')}` : `${at}no moves`;
        this.spoken.pending = null;
      }
    } else if (!key && previous && !this.spoken.pending) {
      const [origin, onward = ''] = previous.split(' >');
      const from = origin.split(' ')[0];
      if (this.activated && onward.split(' ').includes(this.activated)) {
        this.spoken.pending = { from, to: this.activated };
      } else {
        words = `${from} let go`;
      }
    }
    const pending = this.spoken.pending;
    if (pending && marks.lastMove.has(pending.from) && marks.lastMove.has(pending.to)) {
      words = `moved ${pending.from} to ${pending.to}`;
      this.spoken.pending = null;
    }
    if (words) this.live.textContent = words;
  }

  onKey(event) {
    this.element.classList.remove('pointer');
    const steps = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (steps[event.key]) {
      event.preventDefault();
      this.moveCursor(...steps[event.key]);
    } else if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      this.activate(this.squareAt(this.cursor.row, this.cursor.col));
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
    const square = cell.dataset.square;
    // The focus ring is for the keyboard; a pointer shows the selection.
    this.element.classList.add('pointer');
    this.pressed = square;
    this.start = { x: event.clientX, y: event.clientY, id: event.pointerId };
    this.setCursor(square, false);
    // Pressing the selected piece again may start a drag: it is let go
    // only if released where it was pressed without moving.
    this.pressedSelected = cell.classList.contains('selected');
    this.touch = event.pointerType === 'touch';
    if (!this.pressedSelected) this.activate(square);
    try {
      this.element.setPointerCapture(event.pointerId);
    } catch {
      // Synthetic pointers cannot be captured; the drag still works on the board.
    }
  }

  onPointerMove(event) {
    if (!this.pressed || event.pointerId !== this.start?.id) return;
    if (!this.ghost) {
      const far = Math.hypot(event.clientX - this.start.x, event.clientY - this.start.y) > 6;
      const cell = this.cells.get(this.pressed);
      const disc = cell?.querySelector('.piece');
      // Only a piece that may move (the selection) lifts off the board.
      if (!far || !disc || !cell.classList.contains('selected')) return;
      const box = disc.getBoundingClientRect();
      this.ghost = disc.cloneNode(true);
      this.ghost.classList.add('ghost');
      if (this.element.classList.contains('white-first')) this.ghost.classList.add('white-first-ghost');
      this.ghost.style.width = `${box.width}px`;
      this.ghost.style.height = `${box.height}px`;
      document.body.append(this.ghost);
      cell.classList.add('lifted');
    }
    const size = this.ghost.getBoundingClientRect();
    // Lifted a square above the fingertip for touch, under the pointer for a mouse.
    const lift = this.touch ? this.cells.get(this.pressed).getBoundingClientRect().height : 0;
    this.ghost.style.transform = `translate(${event.clientX - size.width / 2}px, ${event.clientY - lift - size.height / 2}px)`;
    if (this.touch) {
      const over = this.cellFromPoint(event);
      for (const cell of this.cells.values()) cell.classList.toggle('drag-over', cell === over);
    }
  }

  endDrag() {
    const dragged = Boolean(this.ghost);
    this.ghost?.remove();
    this.ghost = null;
    for (const cell of this.cells.values()) cell.classList.remove('lifted', 'drag-over');
    this.pressed = null;
    return dragged;
  }

  onPointerUp(event) {
    const from = this.pressed;
    const pressedSelected = this.pressedSelected;
    const dragged = this.endDrag();
    const cell = this.cellFromPoint(event);
    if (!from || !cell) return;
    const to = cell.dataset.square;
    if (to !== from) {
      // A drag: released over another square, which counts as a second click.
      this.setCursor(to, false);
      this.activate(to);
    } else if (pressedSelected && !dragged) {
      // A plain click on the selected piece lets it go.
      this.activate(from);
    }
  }
}

function coordinate(kind, text, index, onDark) {
  const label = document.createElement('span');
  label.className = `coordinate ${kind}${onDark ? ' on-dark' : ''}`;
  label.style.setProperty('--i', String(index));
  label.textContent = text;
  label.setAttribute('aria-hidden', 'true');
  return label;
}
