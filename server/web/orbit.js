// orbit.js — the board view of Space Checkers (`orbit`): an SVG drawn only
// from the geometry the server sends (`game.board`: squares with centres in
// a 1000×1000 box, and the lines joining them), so the page knows nothing
// of the board's shape. Moves are picked by origin and destination, since a
// path passes through squares that are not stops; two moves that share both
// are offered as a choice by their long notation. Like board.js, the view
// only draws and reports; game.js decides what a click means. Like
// board.js, it says a selection and one's own move played in a polite live
// region. It also puts an orbit game's points into words (orbitPointsNote).

const SVG = 'http://www.w3.org/2000/svg';
const BOX = 1000;
const MARGIN = 60;

function svg(tag, attributes = {}) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
}

/** The moves a click on `square` can mean, given the selected origin. */
function endingOn(moves, origin, square) {
  return moves.filter((m) => m.path[0] === origin && m.path[m.path.length - 1] === square);
}

/**
 * What a click on `square` does to an orbit selection (`origin`, or null):
 * returns the new origin, a move to play if the click settles one, and the
 * moves to choose between when two or more share origin and destination.
 */
export function orbitClick(moves, origin, square) {
  const startsHere = moves.some((m) => m.path[0] === square);
  if (origin === null) return { origin: startsHere ? square : null, play: null, choices: [] };
  if (square === origin) return { origin: null, play: null, choices: [] };
  const ending = endingOn(moves, origin, square);
  if (ending.length === 1) return { origin, play: ending[0], choices: [] };
  if (ending.length > 1) return { origin, play: null, choices: ending };
  return { origin: startsHere ? square : null, play: null, choices: [] };
}

/** The highlights of an orbit selection, in the shape BoardView uses. */
export function orbitMarks(game, origin, active) {
  const empty = new Set();
  const marks = {
    selected: empty, path: empty, targets: empty, captures: empty, mustCapture: empty,
    lastMove: new Set(game?.last_move?.path ?? []),
  };
  if (!game || !active || origin === null) return marks;
  const candidates = game.legal_moves.filter((m) => m.path[0] === origin);
  marks.selected = new Set([origin]);
  marks.targets = new Set(candidates.map((m) => m.path[m.path.length - 1]));
  marks.captures = new Set(candidates.flatMap((m) => m.captures));
  return marks;
}

/**
 * What an orbit game's points mean, in words, for the panel beside the
 * board: each side's points as the server sends them (as the board stands;
 * the game is scored so when it ends), and how points are counted, as the
 * rules help says it. The page works out no points itself: the client
 * knows no rules (ARCHITECTURE.md). `names` gives each colour's name as
 * the page says it ("You", "Bob", "Dark"); `first` is the colour to name
 * first (the reader's own).
 */
export function orbitPointsNote(game, names, first = 'dark') {
  const points = game?.result?.points ?? game?.points;
  if (!points) return '';
  const final = Boolean(game.result?.points);
  const second = first === 'dark' ? 'light' : 'dark';
  const head = final ? 'Points this game' : 'Points if the game ended now';
  const how = final ? ''
    : ' A side scores 3 with all its pieces in a row on the inner ring (B1–B12), or 1 with all but one, and 2 more '
      + 'while the other side has at most three pieces there (so both start with 2). The game is scored as the board '
      + 'stands when it ends: more points wins.';
  return `${head}: ${names[first]} ${points[first]}, ${names[second]} ${points[second]}.${how}`;
}

export class OrbitView {
  /**
   * @param {HTMLElement} container
   * @param {{ onActivate(square: string): void, onClear(): void, onChoose(move): void }} handlers
   */
  constructor(container, handlers) {
    this.handlers = handlers;
    this.element = document.createElement('div');
    this.element.className = 'orbit-board';
    this.svg = svg('svg', {
      viewBox: `${-MARGIN} ${-MARGIN} ${BOX + 2 * MARGIN} ${BOX + 2 * MARGIN}`,
      role: 'group',
      'aria-label': 'Orbit board',
    });
    this.choices = document.createElement('div');
    this.choices.className = 'orbit-choices';
    this.choices.setAttribute('role', 'group');
    this.choices.setAttribute('aria-label', 'Choose the way round');
    this.choices.hidden = true;
    // Screen readers hear a selection and where it may go, and a move of
    // this page's once the board shows it played (as board.js says them;
    // what the other side plays, game.js announces).
    this.live = document.createElement('p');
    this.live.className = 'sr-only board-announce';
    this.live.setAttribute('aria-live', 'polite');
    this.spoken = { selection: '', pending: null };
    this.activated = null;
    this.element.append(this.svg, this.choices, this.live);
    this.cells = new Map(); // square name -> <g>
    this.centres = new Map(); // square name -> { x, y } as drawn
    this.key = null;
    this.cursor = null;
    container.append(this.element);

    this.svg.addEventListener('keydown', (e) => this.onKey(e));
    // Whatever square gets the focus (by Tab, arrows or a click) is the cursor.
    this.svg.addEventListener('focusin', (e) => {
      const cell = e.target.closest?.('.orbit-square');
      if (cell && cell.dataset.square !== this.cursor) this.setCursor(cell.dataset.square, false);
    });
    this.svg.addEventListener('pointerdown', (e) => this.onPointerDown(e));
    this.svg.addEventListener('pointerup', (e) => this.onPointerUp(e));
  }

  /** Draws the lines and squares once per geometry and turn of the board. */
  build(board, flipped) {
    this.key = JSON.stringify([board, flipped]);
    this.svg.replaceChildren();
    this.cells.clear();
    this.centres.clear();
    const place = ({ x, y }) => (flipped ? { x: BOX - x, y: BOX - y } : { x, y });
    for (const square of board.squares) this.centres.set(square.name, place(square));

    let closest = Infinity;
    const points = [...this.centres.values()];
    for (let i = 0; i < points.length; i += 1) {
      for (let j = i + 1; j < points.length; j += 1) {
        closest = Math.min(closest, Math.hypot(points[i].x - points[j].x, points[i].y - points[j].y));
      }
    }
    this.radius = Math.max(12, Math.min(55, Number.isFinite(closest) ? closest * 0.4 : 40));

    const lines = svg('g', { class: 'orbit-lines', 'aria-hidden': 'true' });
    for (const [a, b] of board.lines) {
      const p = this.centres.get(a);
      const q = this.centres.get(b);
      if (!p || !q) continue;
      lines.append(svg('line', { x1: p.x, y1: p.y, x2: q.x, y2: q.y }));
    }
    this.svg.append(lines);

    for (const square of board.squares) {
      const { x, y } = this.centres.get(square.name);
      const cell = svg('g', { class: 'orbit-square', 'data-square': square.name, role: 'button', tabindex: -1 });
      cell.append(
        svg('circle', { class: 'spot', cx: x, cy: y, r: this.radius }),
        svg('circle', { class: 'orbit-piece', cx: x, cy: y, r: this.radius * 0.72, 'aria-hidden': 'true' }),
      );
      // The name sits in the middle of the square, over any piece.
      const label = svg('text', {
        class: 'orbit-name', x, y, 'text-anchor': 'middle', 'dominant-baseline': 'central',
        'font-size': Math.round(this.radius * 0.55), 'aria-hidden': 'true',
      });
      label.textContent = square.name;
      cell.append(label);
      this.svg.append(cell);
      this.cells.set(square.name, cell);
    }
    const first = this.cursor && this.cells.has(this.cursor) ? this.cursor : board.squares[0]?.name;
    if (first) this.setCursor(first, false);
  }

  /**
   * Draws a position. `marks` as for BoardView (selected, targets, captures,
   * lastMove); `choices` the moves to pick between, if any.
   */
  render({ board, flipped, pieces, marks, choices = [] }) {
    if (!board) return;
    if (JSON.stringify([board, flipped]) !== this.key) this.build(board, flipped);
    const bySquare = new Map(pieces.map((p) => [p.square, p]));
    for (const [square, cell] of this.cells) {
      const piece = bySquare.get(square);
      cell.classList.toggle('occupied', Boolean(piece));
      cell.classList.toggle('dark', piece?.color === 'dark');
      cell.classList.toggle('light', piece?.color === 'light');
      const flags = [];
      const toggle = (cls, set, words) => {
        const on = set.has(square);
        cell.classList.toggle(cls, on);
        if (on) flags.push(words);
      };
      toggle('selected', marks.selected, 'selected');
      toggle('target', marks.targets, 'can move here');
      toggle('capture', marks.captures, 'will be captured');
      toggle('last-move', marks.lastMove, 'last move');
      const what = piece ? `${piece.color} piece` : 'empty';
      cell.setAttribute('aria-label', [square, what, ...flags].join(', '));
    }
    this.renderChoices(choices);
    this.speak(marks);
  }

  /** Says a new selection ("B3 selected, 2 moves: A3, C"), one let go, and a move of this page's played. */
  speak(marks) {
    const [selected] = marks.selected;
    const targets = [...marks.targets].sort();
    const key = selected ? [selected, '>', ...targets].join(' ') : '';
    const previous = this.spoken.selection;
    this.spoken.selection = key;
    let words = '';
    if (key && key !== previous) {
      const count = `${targets.length} ${targets.length === 1 ? 'move' : 'moves'}`;
      words = targets.length > 0 ? `${selected} selected, ${count}: ${targets.join(', ')}` : `${selected} selected, no moves`;
      this.spoken.pending = null;
    } else if (!key && previous && !this.spoken.pending) {
      const [from, onward = ''] = previous.split(' >');
      if (this.activated && onward.split(' ').includes(this.activated)) this.spoken.pending = { from, to: this.activated };
      else words = `${from} let go`;
    }
    const pending = this.spoken.pending;
    if (pending && marks.lastMove.has(pending.from) && marks.lastMove.has(pending.to)) {
      words = `moved ${pending.from} to ${pending.to}`;
      this.spoken.pending = null;
    }
    if (words) this.live.textContent = words;
  }

  /** A square clicked or pressed: remembered, so that the move it plays can be said. */
  activate(square) {
    this.activated = square;
    this.handlers.onActivate(square);
  }

  renderChoices(choices) {
    this.choices.replaceChildren();
    this.choices.hidden = choices.length === 0;
    if (choices.length === 0) return;
    const text = document.createElement('p');
    text.textContent = 'Two ways lead there. Which one?';
    this.choices.append(text);
    for (const move of choices) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'orbit-choice';
      button.textContent = move.notation;
      const taken = move.captures.length > 0 ? `, captures ${move.captures.join(', ')}` : '';
      button.setAttribute('aria-label', `Play ${move.path.join(', ')}${taken}`);
      button.addEventListener('click', () => this.handlers.onChoose(move));
      this.choices.append(button);
    }
  }

  setCursor(square, focus = true) {
    const cell = this.cells.get(square);
    if (!cell) return;
    for (const other of this.cells.values()) other.setAttribute('tabindex', '-1');
    cell.setAttribute('tabindex', '0');
    this.cursor = square;
    if (focus) cell.focus();
  }

  /** The nearest square roughly in direction (dx, dy) on screen from the cursor. */
  neighbour(dx, dy) {
    const from = this.centres.get(this.cursor);
    if (!from) return null;
    let best = null;
    let bestScore = Infinity;
    for (const [name, at] of this.centres) {
      if (name === this.cursor) continue;
      const vx = at.x - from.x;
      const vy = at.y - from.y;
      const distance = Math.hypot(vx, vy);
      const along = (vx * dx + vy * dy) / distance; // cosine of the angle off the arrow
      if (along < 0.38) continue; // more than about 68° off
      const score = distance * (2 - along);
      if (score < bestScore) {
        bestScore = score;
        best = name;
      }
    }
    return best;
  }

  onKey(event) {
    const steps = { ArrowUp: [0, -1], ArrowDown: [0, 1], ArrowLeft: [-1, 0], ArrowRight: [1, 0] };
    if (steps[event.key]) {
      event.preventDefault();
      const next = this.neighbour(...steps[event.key]);
      if (next) this.setCursor(next);
    } else if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      if (this.cursor) this.activate(this.cursor);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      this.handlers.onClear();
    }
  }

  onPointerDown(event) {
    if (event.button !== 0) return;
    const cell = event.target.closest?.('.orbit-square');
    if (!cell) return;
    this.pressed = cell.dataset.square;
    this.setCursor(cell.dataset.square);
    this.activate(cell.dataset.square);
  }

  onPointerUp(event) {
    const from = this.pressed;
    this.pressed = null;
    const hit = document.elementFromPoint(event.clientX, event.clientY)?.closest?.('.orbit-square');
    // A drag: released over another square, which counts as a second click.
    if (from && hit && hit.dataset.square !== from) {
      this.setCursor(hit.dataset.square);
      this.activate(hit.dataset.square);
    }
  }
}
