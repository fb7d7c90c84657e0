/**
 * The JSON rules shared by every way text enters the product: an HTTP request body and a
 * Kafka message value are read by the same function, under the same limits, so a value
 * that one path refuses cannot reach the other's code.
 */

/** Deepest nesting of arrays and objects a JSON value may have; a top-level `{}` is depth 1. */
export const MAX_JSON_DEPTH = 32;

/**
 * What can be wrong with a JSON text: not JSON at all; nesting deeper than MAX_JSON_DEPTH;
 * a `__proto__` key (a prototype-pollution vector for any code that later copies the value
 * with assignment); a number beyond a double's range, which JSON.parse turns into Infinity
 * and JSON.stringify then writes as null (in a merge patch, a silent deletion).
 */
export type JsonProblem = 'not-json' | 'too-deep' | 'proto-key' | 'number-out-of-range';

export type JsonReading = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: JsonProblem; readonly detail: string };

const DETAILS: Readonly<Record<JsonProblem, string>> = {
  'not-json': 'is not valid JSON',
  'too-deep': `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
  'proto-key': 'has a "__proto__" key',
  'number-out-of-range': 'holds a number beyond the range of a double (about 1.8e308)',
};

const refused = (problem: JsonProblem): JsonReading => ({ ok: false, problem, detail: DETAILS[problem] });

/** What one pass over the text, outside its strings, found. */
interface Shape {
  readonly tooDeep: boolean;
  /** An `e` or `E` outside a string: a number with an exponent, the only way to overflow a double. */
  readonly exponent: boolean;
  /** A backslash inside a string: a key may spell `__proto__` with escapes. */
  readonly escapes: boolean;
}

function scan(text: string, maxDepth: number): Shape {
  let depth = 0;
  let inString = false;
  let exponent = false;
  let escapes = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        escapes = true;
        i++;
      } else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return { tooDeep: true, exponent, escapes };
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x65 || c === 0x45) exponent = true;
  }
  return { tooDeep: false, exponent, escapes };
}

/** Whether the text nests arrays and objects deeper than `max`, counting only brackets outside strings. */
export function nestsDeeperThan(text: string, max: number): boolean {
  return scan(text, max).tooDeep;
}

class Refusal extends Error {
  constructor(readonly problem: JsonProblem) {
    super(problem);
  }
}

function checked(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new Refusal('proto-key');
  if (typeof value === 'number' && !Number.isFinite(value)) throw new Refusal('number-out-of-range');
  return value;
}

/**
 * Reads a JSON text under the rules above. The depth is checked in one pass before
 * JSON.parse, so a deeply nested text never becomes a value: everything downstream that
 * walks a value (validation, fingerprinting, serializing it again) recurses. The
 * per-member check runs only when that pass saw an exponent or an escape, since without
 * them no number can overflow and no key can be `__proto__` but literally, which the
 * text search finds: most texts parse with no reviver at all, at JSON.parse's own speed.
 */
export function readBoundedJson(text: string): JsonReading {
  const shape = scan(text, MAX_JSON_DEPTH);
  if (shape.tooDeep) return refused('too-deep');
  const careful = shape.exponent || shape.escapes || text.includes('__proto__');
  try {
    return { ok: true, value: careful ? JSON.parse(text, checked) : JSON.parse(text) };
  } catch (error) {
    return refused(error instanceof Refusal ? error.problem : 'not-json');
  }
}
