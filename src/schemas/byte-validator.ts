import { MAX_JSON_DEPTH } from '../json/bounded-json.js';
import { isStorableUtcInstant } from '../time/storable-instant.js';

/**
 * A validator that reads a JSON text as bytes and builds no value from it: the ingest
 * consumer's fast path. JSON.parse plus AJV built and walked an object tree for every
 * event, about a fifth of the consumer's CPU before the garbage it left was collected.
 *
 * It only ever accepts. A text it is not sure of (an escape anywhere, a member it does not
 * know, a key given twice, a timestamp that is not plain UTC, a line break, anything the
 * full rules would refuse) gets false, and the caller reads it the full way (readBoundedJson, then
 * AJV), which also names what is wrong. So what it accepts is a subset of what the full
 * way accepts, with the same values: test/unit/schemas/byte-validator.test.ts holds it to
 * that over generated texts.
 *
 * It is compiled from the JSON Schema itself, so schemas/ stays the one source of the
 * rules; a schema keyword it does not know stops the process at start instead of being
 * skipped.
 */

/**
 * Whether the validator is sure of the text. When it is, `out` holds the property values
 * asked for, in the order asked, as strings (undefined for an absent or null one).
 */
export type ByteValidator = (bytes: Buffer, out: (string | undefined)[]) => boolean;

interface PropertyRule {
  readonly name: Buffer;
  readonly bit: number;
  readonly kind: 'string' | 'object';
  readonly nullable: boolean;
  readonly format: 'uuid' | 'date-time' | undefined;
  readonly minLength: number;
  readonly maxLength: number;
  /** Where its value goes in the result, or -1. */
  readonly slot: number;
}

interface ObjectSchema {
  readonly type?: unknown;
  readonly additionalProperties?: unknown;
  readonly required?: readonly string[];
  readonly properties?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

const ANNOTATIONS = new Set(['$schema', '$id', 'title', 'description', 'examples']);
const PROPERTY_KEYWORDS = new Set(['type', 'format', 'minLength', 'maxLength', 'additionalProperties', 'description', 'title', 'examples']);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const PROTO = Buffer.from('__proto__');
const NULL = Buffer.from('null');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');

function unsupported(what: string): never {
  throw new Error(`the byte validator cannot compile ${what}; extend src/schemas/byte-validator.ts or drop the fast path`);
}

function compileProperty(name: string, schema: Readonly<Record<string, unknown>>, bit: number, slot: number): PropertyRule {
  for (const keyword of Object.keys(schema)) if (!PROPERTY_KEYWORDS.has(keyword)) unsupported(`keyword "${keyword}" of property "${name}"`);
  const types = Array.isArray(schema['type']) ? (schema['type'] as unknown[]) : [schema['type']];
  const nullable = types.includes('null');
  const others = types.filter((t) => t !== 'null');
  if (others.length !== 1 || (others[0] !== 'string' && others[0] !== 'object')) unsupported(`type ${JSON.stringify(schema['type'])} of property "${name}"`);
  const kind = others[0];
  if (kind === 'object' && schema['additionalProperties'] !== true) unsupported(`an object property "${name}" that is not open`);
  const format = schema['format'];
  if (format !== undefined && format !== 'uuid' && format !== 'date-time') unsupported(`format ${JSON.stringify(format)} of property "${name}"`);
  const length = (keyword: string, fallback: number): number => {
    const value = schema[keyword];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value)) unsupported(`${keyword} ${JSON.stringify(value)} of property "${name}"`);
    return value;
  };
  return {
    name: Buffer.from(name),
    bit,
    kind,
    nullable,
    format,
    minLength: length('minLength', 0),
    maxLength: length('maxLength', Number.MAX_SAFE_INTEGER),
    slot,
  };
}

/**
 * Spaces and tabs only: JSON allows line breaks between tokens too, but a text the validator
 * accepts is written as one line of an insert body (one row per line), and a line break
 * inside it would end the row there (an empty line ends chDB's data). A text with one goes
 * the full way and is written encoded; the reader trims the breaks around a text first
 * (src/ingest/canonical-event-bytes.ts), since log shippers end every line with one.
 */
const isWhitespace = (c: number) => c === 0x20 || c === 0x09;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/** 1 at the bytes of a hex digit, in either case. */
const HEX = new Uint8Array(256);
for (const c of Buffer.from('0123456789abcdefABCDEF')) HEX[c] = 1;

/** Whether b[from..to) are hex digits; a position past the end reads as undefined, which is not. */
function hexRun(b: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (HEX[b[i]!] !== 1) return false;
  return true;
}

/** The 36-character hyphenated form of src/ids/uuid.ts, in either case, at b[start..]. */
function isUuidAt(b: Uint8Array, start: number): boolean {
  if (b[start + 8] !== MINUS || b[start + 13] !== MINUS || b[start + 18] !== MINUS || b[start + 23] !== MINUS) return false;
  return hexRun(b, start, start + 8) && hexRun(b, start + 9, start + 13) && hexRun(b, start + 14, start + 18) && hexRun(b, start + 19, start + 23) && hexRun(b, start + 24, start + 36);
}

function digitsAt(b: Uint8Array, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const c = b[i]!;
    if (!isDigit(c)) return -1;
    n = n * 10 + (c - 0x30);
  }
  return n;
}

/**
 * `YYYY-MM-DDThh:mm:ss[.f{1,9}]Z` naming a real instant of 1900–2299 with no leap second:
 * the form src/store/timestamps.ts converts without a Date and src/store/event-row-text.ts
 * lets pass as its own text. Every other RFC 3339 form goes the full way.
 */
function isPlainUtcAt(b: Uint8Array, start: number, end: number): boolean {
  const length = end - start;
  if (length < 20 || length === 21 || length > 30) return false;
  if (b[start + 4] !== MINUS || b[start + 7] !== MINUS || b[start + 10] !== 0x54 || b[start + 13] !== COLON || b[start + 16] !== COLON) return false;
  if (b[end - 1] !== 0x5a) return false;
  if (length > 20) {
    if (b[start + 19] !== 0x2e || digitsAt(b, start + 20, length - 21) < 0) return false;
  }
  // A field that is not all digits reads as -1, which no range takes.
  return isStorableUtcInstant(
    digitsAt(b, start, 4),
    digitsAt(b, start + 5, 2),
    digitsAt(b, start + 8, 2),
    digitsAt(b, start + 11, 2),
    digitsAt(b, start + 14, 2),
    digitsAt(b, start + 17, 2),
  );
}

/** A string's characters: code points, as AJV counts minLength and maxLength. The string has no escapes. */
function charactersAt(b: Uint8Array, start: number, end: number): number {
  let count = 0;
  // A UTF-8 continuation byte is not a character of its own.
  for (let i = start; i < end; i++) if ((b[i]! & 0xc0) !== 0x80) count++;
  return count;
}

/** Whether b[at..] spells `word`. */
function spells(b: Uint8Array, at: number, word: Uint8Array): boolean {
  if (at + word.length > b.length) return false;
  for (let i = 0; i < word.length; i++) if (b[at + i] !== word[i]) return false;
  return true;
}

/**
 * A position in one text. The scan is plain loops over the bytes: a call into Buffer's
 * native methods (indexOf, compare) costs more than the few bytes it would cover, and
 * made a first version of this file slower than JSON.parse.
 */
class Cursor {
  b: Buffer = Buffer.alloc(0);
  i = 0;
  n = 0;

  /** One cursor serves every text in turn: the scan is synchronous, and an object per event was garbage to collect. */
  reset(b: Buffer): void {
    this.b = b;
    this.i = 0;
    this.n = b.length;
  }

  skipWhitespace(): void {
    const { b, n } = this;
    let i = this.i;
    while (i < n && isWhitespace(b[i]!)) i++;
    this.i = i;
  }

  /**
   * At an opening quote: moves past the closing one and returns where the content ends,
   * or -1 for an escape (left to the full way: `"\u0069d"` is the key id to JSON.parse),
   * a control character (which JSON allows only escaped) or no closing quote.
   */
  string(): number {
    const { b, n } = this;
    for (let i = this.i + 1; i < n; i++) {
      const c = b[i]!;
      if (c === QUOTE) {
        this.i = i + 1;
        return i;
      }
      if (c === BACKSLASH || c < 0x20) return -1;
    }
    return -1;
  }

  word(word: Uint8Array): boolean {
    if (!spells(this.b, this.i, word)) return false;
    this.i += word.length;
    return true;
  }

  number(): boolean {
    const { b, n } = this;
    const start = this.i;
    let i = start;
    if (b[i] === MINUS) i++;
    if (b[i] === 0x30) i++;
    else if (i < n && b[i]! >= 0x31 && b[i]! <= 0x39) while (i < n && isDigit(b[i]!)) i++;
    else return false;
    if (b[i] === 0x2e) {
      i++;
      if (!(i < n && isDigit(b[i]!))) return false;
      while (i < n && isDigit(b[i]!)) i++;
    }
    let exponent = false;
    if (b[i] === 0x65 || b[i] === 0x45) {
      exponent = true;
      i++;
      if (b[i] === 0x2b || b[i] === MINUS) i++;
      if (!(i < n && isDigit(b[i]!))) return false;
      while (i < n && isDigit(b[i]!)) i++;
    }
    this.i = i;
    // Without an exponent a number needs over 308 digits to pass a double's range.
    return (!exponent && i - start < 300) || Number.isFinite(Number(b.toString('latin1', start, i)));
  }

  /** Any JSON value inside an object or array at `depth`; refuses what the full rules refuse. */
  value(depth: number): boolean {
    const c = this.b[this.i];
    if (c === QUOTE) return this.string() !== -1;
    if (c === OPEN_BRACE || c === OPEN_BRACKET) return this.container(depth + 1);
    if (c === 0x6e) return this.word(NULL);
    if (c === 0x74) return this.word(TRUE);
    if (c === 0x66) return this.word(FALSE);
    return this.number();
  }

  /** An object or array opening here, at `depth`, with no `__proto__` key at any level. */
  container(depth: number): boolean {
    if (depth > MAX_JSON_DEPTH) return false;
    const isObject = this.b[this.i] === OPEN_BRACE;
    const close = isObject ? CLOSE_BRACE : CLOSE_BRACKET;
    this.i++;
    this.skipWhitespace();
    if (this.b[this.i] === close) {
      this.i++;
      return true;
    }
    for (;;) {
      if (isObject) {
        if (this.b[this.i] !== QUOTE) return false;
        const start = this.i + 1;
        const end = this.string();
        if (end === -1) return false;
        if (end - start === PROTO.length && spells(this.b, start, PROTO)) return false;
        this.skipWhitespace();
        if (this.b[this.i] !== COLON) return false;
        this.i++;
        this.skipWhitespace();
      }
      if (!this.value(depth)) return false;
      this.skipWhitespace();
      const c = this.b[this.i];
      if (c === COMMA) {
        this.i++;
        this.skipWhitespace();
      } else if (c === close) {
        this.i++;
        return true;
      } else return false;
    }
  }
}

export function compileByteValidator(schema: ObjectSchema, extract: readonly string[]): ByteValidator {
  for (const keyword of Object.keys(schema)) {
    if (!ANNOTATIONS.has(keyword) && keyword !== 'type' && keyword !== 'additionalProperties' && keyword !== 'required' && keyword !== 'properties') {
      unsupported(`top-level keyword "${keyword}"`);
    }
  }
  if (schema.type !== 'object' || schema.additionalProperties !== false || schema.properties === undefined) unsupported('a schema that is not a closed object');
  const names = Object.keys(schema.properties);
  if (names.length > 30) unsupported('more than 30 properties');
  const rules = names.map((name, i) => compileProperty(name, schema.properties![name]!, 1 << i, extract.indexOf(name)));
  for (const name of extract) if (!names.includes(name)) unsupported(`extracting "${name}", which the schema does not have`);
  let requiredMask = 0;
  for (const name of schema.required ?? []) {
    const rule = rules.find((r) => r.name.toString() === name);
    if (rule === undefined) unsupported(`required "${name}" without a property`);
    requiredMask |= rule.bit;
  }

  function ruleFor(b: Uint8Array, start: number, end: number): PropertyRule | undefined {
    for (const rule of rules) if (rule.name.length === end - start && spells(b, start, rule.name)) return rule;
    return undefined;
  }

  /** The member's value at the cursor, checked by its rule; false sends the text the full way. */
  function member(at: Cursor, rule: PropertyRule, found: (string | undefined)[]): boolean {
    const { b } = at;
    if (rule.nullable && b[at.i] === 0x6e) return at.word(NULL);
    if (rule.kind === 'object') return b[at.i] === OPEN_BRACE && at.container(2);
    if (b[at.i] !== QUOTE) return false;
    const start = at.i + 1;
    let end: number;
    if (rule.format === 'uuid') {
      // Hex digits and hyphens hold no quote, escape or control character: no need to scan the string first.
      end = start + 36;
      if (!isUuidAt(b, start) || b[end] !== QUOTE) return false;
      at.i = end + 1;
    } else {
      end = at.string();
      if (end === -1) return false;
    }
    if (rule.format === 'date-time' && !isPlainUtcAt(b, start, end)) return false;
    if (rule.minLength > 0 || rule.maxLength < Number.MAX_SAFE_INTEGER) {
      const characters = charactersAt(b, start, end);
      if (characters < rule.minLength || characters > rule.maxLength) return false;
    }
    // A formatted value is ASCII, which latin1 reads faster than utf8.
    if (rule.slot !== -1) found[rule.slot] = b.toString(rule.format === undefined ? 'utf8' : 'latin1', start, end);
    return true;
  }

  const at = new Cursor();
  return (b, found) => {
    at.reset(b);
    for (let k = 0; k < extract.length; k++) found[k] = undefined;
    let seen = 0;
    at.skipWhitespace();
    if (b[at.i] !== OPEN_BRACE) return false;
    at.i++;
    at.skipWhitespace();
    if (b[at.i] !== CLOSE_BRACE) {
      for (;;) {
        if (b[at.i] !== QUOTE) return false;
        const keyStart = at.i + 1;
        const keyEnd = at.string();
        if (keyEnd === -1) return false;
        const rule = ruleFor(b, keyStart, keyEnd);
        // An unknown member, or one given twice (JSON.parse keeps the last): the full way says which.
        if (rule === undefined || (seen & rule.bit) !== 0) return false;
        seen |= rule.bit;
        at.skipWhitespace();
        if (b[at.i] !== COLON) return false;
        at.i++;
        at.skipWhitespace();
        if (!member(at, rule, found)) return false;
        at.skipWhitespace();
        if (b[at.i] === COMMA) {
          at.i++;
          at.skipWhitespace();
        } else if (b[at.i] === CLOSE_BRACE) break;
        else return false;
      }
    }
    at.i++;
    at.skipWhitespace();
    return at.i === at.n && (seen & requiredMask) === requiredMask;
  };
}
