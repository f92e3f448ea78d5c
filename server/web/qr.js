// qr.js — a QR code for the invite link, so a phone can scan it off a
// screen. A small encoder written for this client from the QR code
// specification (ISO/IEC 18004): byte mode, error correction level M,
// versions 1 to 10 (up to 213 bytes, far more than any invite link), the
// mask with the lowest penalty. Drawn as an SVG.

/** Level M, per version: [error correction codewords per block, [data codewords per block…]]. */
const BLOCKS = [
  null,
  [10, [16]],
  [16, [28]],
  [26, [44]],
  [18, [32, 32]],
  [24, [43, 43]],
  [16, [27, 27, 27, 27]],
  [18, [31, 31, 31, 31]],
  [22, [38, 38, 39, 39]],
  [22, [36, 36, 36, 37, 37]],
  [26, [43, 43, 43, 43, 44]],
];

/** Centres of the alignment patterns, per version. */
const ALIGNMENT = [null, [], [6, 18], [6, 22], [6, 26], [6, 30], [6, 34], [6, 22, 38], [6, 24, 42], [6, 26, 46], [6, 28, 50]];

const LEVEL_M = 0b00;

/** Multiplication in GF(256) modulo x^8 + x^4 + x^3 + x^2 + 1. */
function gfMultiply(a, b) {
  let product = 0;
  for (let bit = 7; bit >= 0; bit -= 1) {
    product = (product << 1) ^ ((product >>> 7) * 0x11d);
    if ((b >>> bit) & 1) product ^= a;
  }
  return product & 0xff;
}

/** The Reed–Solomon generator of `degree`, leading coefficient left out. */
function generator(degree) {
  const poly = new Array(degree).fill(0);
  poly[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i += 1) {
    for (let j = 0; j < degree; j += 1) {
      poly[j] = gfMultiply(poly[j], root);
      if (j + 1 < degree) poly[j] ^= poly[j + 1];
    }
    root = gfMultiply(root, 2);
  }
  return poly;
}

/** The error correction codewords of one block. */
function errorCorrection(data, poly) {
  const rest = new Array(poly.length).fill(0);
  for (const byte of data) {
    const factor = byte ^ rest.shift();
    rest.push(0);
    for (let i = 0; i < poly.length; i += 1) rest[i] ^= gfMultiply(poly[i], factor);
  }
  return rest;
}

/** The remainder of `value << bits` divided by `poly` (BCH codes of the format and version). */
function bch(value, bits, poly) {
  const degree = Math.floor(Math.log2(poly));
  let rest = value << degree;
  for (let bit = bits + degree - 1; bit >= degree; bit -= 1) {
    if ((rest >>> bit) & 1) rest ^= poly << (bit - degree);
  }
  return (value << degree) | rest;
}

/** The message's codewords, blocks interleaved, for `version`. */
function codewords(bytes, version) {
  const [ecLength, dataLengths] = BLOCKS[version];
  const capacity = dataLengths.reduce((a, b) => a + b, 0);
  const bits = [];
  const push = (value, length) => {
    for (let i = length - 1; i >= 0; i -= 1) bits.push((value >>> i) & 1);
  };
  push(0b0100, 4); // byte mode
  push(bytes.length, version < 10 ? 8 : 16);
  for (const byte of bytes) push(byte, 8);
  push(0, Math.min(4, capacity * 8 - bits.length)); // terminator
  while (bits.length % 8) bits.push(0);
  const data = [];
  for (let i = 0; i < bits.length; i += 8) data.push(bits.slice(i, i + 8).reduce((a, b) => (a << 1) | b, 0));
  for (let pad = 0xec; data.length < capacity; pad ^= 0xec ^ 0x11) data.push(pad);

  const poly = generator(ecLength);
  const blocks = [];
  let at = 0;
  for (const length of dataLengths) {
    const block = data.slice(at, at + length);
    at += length;
    blocks.push({ data: block, ec: errorCorrection(block, poly) });
  }
  const result = [];
  const longest = Math.max(...dataLengths);
  for (let i = 0; i < longest; i += 1) for (const b of blocks) if (i < b.data.length) result.push(b.data[i]);
  for (let i = 0; i < ecLength; i += 1) for (const b of blocks) result.push(b.ec[i]);
  return result;
}

const MASKS = [
  (x, y) => (x + y) % 2 === 0,
  (x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

/** A square grid of modules with the function patterns drawn and reserved. */
class Grid {
  constructor(version) {
    this.version = version;
    this.size = version * 4 + 17;
    this.dark = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
    this.fixed = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
  }

  set(x, y, dark) {
    this.dark[y][x] = dark;
    this.fixed[y][x] = true;
  }

  drawPatterns() {
    const { size } = this;
    for (let i = 0; i < size; i += 1) {
      this.set(6, i, i % 2 === 0);
      this.set(i, 6, i % 2 === 0);
    }
    for (const [cx, cy] of [[3, 3], [size - 4, 3], [3, size - 4]]) {
      for (let dy = -4; dy <= 4; dy += 1) {
        for (let dx = -4; dx <= 4; dx += 1) {
          const x = cx + dx;
          const y = cy + dy;
          if (x < 0 || y < 0 || x >= size || y >= size) continue;
          const ring = Math.max(Math.abs(dx), Math.abs(dy));
          this.set(x, y, ring !== 2 && ring !== 4);
        }
      }
    }
    const centres = ALIGNMENT[this.version];
    for (const cx of centres) {
      for (const cy of centres) {
        const nearFinder = (cx === 6 && cy === 6) || (cx === 6 && cy === centres.at(-1)) || (cx === centres.at(-1) && cy === 6);
        if (nearFinder) continue;
        for (let dy = -2; dy <= 2; dy += 1) {
          for (let dx = -2; dx <= 2; dx += 1) this.set(cx + dx, cy + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
        }
      }
    }
    this.drawFormat(0); // reserves the format areas; drawn for real once the mask is known
    if (this.version >= 7) {
      const bits = bch(this.version, 6, 0x1f25);
      for (let i = 0; i < 18; i += 1) {
        const dark = ((bits >>> i) & 1) === 1;
        const a = size - 11 + (i % 3);
        const b = Math.floor(i / 3);
        this.set(a, b, dark);
        this.set(b, a, dark);
      }
    }
  }

  drawFormat(mask) {
    const { size } = this;
    const bits = bch((LEVEL_M << 3) | mask, 5, 0x537) ^ 0x5412;
    const bit = (i) => ((bits >>> i) & 1) === 1;
    for (let i = 0; i <= 5; i += 1) this.set(8, i, bit(i));
    this.set(8, 7, bit(6));
    this.set(8, 8, bit(7));
    this.set(7, 8, bit(8));
    for (let i = 9; i < 15; i += 1) this.set(14 - i, 8, bit(i));
    for (let i = 0; i < 8; i += 1) this.set(size - 1 - i, 8, bit(i));
    for (let i = 8; i < 15; i += 1) this.set(8, size - 15 + i, bit(i));
    this.set(8, size - 8, true); // the module that is always dark
  }

  /** Lays the codewords in the two-column zigzag, right to left. */
  drawData(words) {
    const { size } = this;
    let i = 0;
    for (let right = size - 1; right >= 1; right -= 2) {
      if (right === 6) right = 5; // the vertical timing pattern is skipped
      const upward = ((right + 1) & 2) === 0;
      for (let step = 0; step < size; step += 1) {
        const y = upward ? size - 1 - step : step;
        for (const x of [right, right - 1]) {
          if (this.fixed[y][x]) continue;
          this.dark[y][x] = i < words.length * 8 && ((words[i >>> 3] >>> (7 - (i & 7))) & 1) === 1;
          i += 1;
        }
      }
    }
  }

  applyMask(mask) {
    for (let y = 0; y < this.size; y += 1) {
      for (let x = 0; x < this.size; x += 1) {
        if (!this.fixed[y][x] && MASKS[mask](x, y)) this.dark[y][x] = !this.dark[y][x];
      }
    }
  }

  /** How hard the grid is to read: long runs, 2×2 blocks and imbalance (the specification's rules 1, 2 and 4). */
  penalty() {
    const { size, dark } = this;
    let score = 0;
    for (let line = 0; line < size; line += 1) {
      for (const along of [(i) => dark[line][i], (i) => dark[i][line]]) {
        let run = 1;
        for (let i = 1; i <= size; i += 1) {
          if (i < size && along(i) === along(i - 1)) {
            run += 1;
          } else {
            if (run >= 5) score += run - 2;
            run = 1;
          }
        }
      }
    }
    for (let y = 0; y + 1 < size; y += 1) {
      for (let x = 0; x + 1 < size; x += 1) {
        const c = dark[y][x];
        if (dark[y][x + 1] === c && dark[y + 1][x] === c && dark[y + 1][x + 1] === c) score += 3;
      }
    }
    const total = dark.flat().filter(Boolean).length;
    score += Math.floor(Math.abs(total * 20 - size * size * 10) / (size * size)) * 10;
    return score;
  }
}

/** The modules of the QR code for `text`: rows of booleans (true is dark). */
export function qrModules(text) {
  const bytes = [...new TextEncoder().encode(text)];
  const version = BLOCKS.findIndex((entry, v) => {
    if (!entry) return false;
    const capacity = entry[1].reduce((a, b) => a + b, 0);
    return 4 + (v < 10 ? 8 : 16) + bytes.length * 8 <= capacity * 8;
  });
  if (version < 1) throw new RangeError('too long for a QR code here');
  const words = codewords(bytes, version);
  let best = null;
  for (let mask = 0; mask < 8; mask += 1) {
    const grid = new Grid(version);
    grid.drawPatterns();
    grid.drawData(words);
    grid.applyMask(mask);
    grid.drawFormat(mask);
    const score = grid.penalty();
    if (!best || score < best.score) best = { score, grid };
  }
  return best.grid.dark;
}

/** An SVG of the QR code for `text`, with the quiet zone around it. */
export function qrSvg(text, label) {
  const modules = qrModules(text);
  const quiet = 4;
  const size = modules.length + quiet * 2;
  let path = '';
  modules.forEach((row, y) => row.forEach((dark, x) => {
    if (dark) path += `M${x + quiet} ${y + quiet}h1v1h-1z`;
  }));
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.setAttribute('shape-rendering', 'crispEdges');
  const background = document.createElementNS(ns, 'rect');
  background.setAttribute('width', String(size));
  background.setAttribute('height', String(size));
  background.setAttribute('fill', '#fff');
  const marks = document.createElementNS(ns, 'path');
  marks.setAttribute('d', path);
  marks.setAttribute('fill', '#000');
  svg.append(background, marks);
  return svg;
}
