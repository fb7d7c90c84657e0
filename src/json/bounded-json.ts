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

const DETAILS: Readonly<Record<Exclude<JsonProblem, 'too-deep'>, string>> = {
  'not-json': 'is not valid JSON',
  'proto-key': 'has a "__proto__" key',
  'number-out-of-range': 'holds a number beyond the range of a double (about 1.8e308)',
};

const refused = (problem: Exclude<JsonProblem, 'too-deep'>): JsonReading => ({ ok: false, problem, detail: DETAILS[problem] });
const tooDeep = (maxDepth: number): JsonReading => ({ ok: false, problem: 'too-deep', detail: `nests arrays and objects deeper than ${maxDepth} levels` });

/** Whether the text nests arrays and objects deeper than `max`, counting only brackets outside strings. */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** How many `{` and `[` the text holds, anywhere, counting no further than `limit + 1`. */
function openingsUpTo(text: string, limit: number): number {
  let count = 0;
  for (let i = text.indexOf('{'); i !== -1 && count <= limit; i = text.indexOf('{', i + 1)) count++;
  for (let i = text.indexOf('['); i !== -1 && count <= limit; i = text.indexOf('[', i + 1)) count++;
  return count;
}

/** The first `__proto__` key or number beyond a double in a parsed value; its depth is known to be bounded. */
function problemIn(value: unknown): 'proto-key' | 'number-out-of-range' | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : 'number-out-of-range';
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) {
      const found = problemIn(item);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  // JSON.parse makes every member an own property, `__proto__` included.
  for (const key of Object.keys(value)) {
    if (key === '__proto__') return 'proto-key';
    const found = problemIn((value as Record<string, unknown>)[key]);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Reads a JSON text under the rules above. The depth is known before JSON.parse, so a
 * deeply nested text never becomes a value: everything downstream that walks a value
 * (validation, fingerprinting, serializing it again) recurses. A text with no more than
 * MAX_JSON_DEPTH brackets in all cannot nest deeper, and counting them is a few native
 * searches; only a text with more is scanned character by character, which cost the
 * ingest consumer about 7% of its CPU when every event was scanned. The parsed value is
 * then walked for `__proto__` keys and numbers beyond a double.
 */
export function readBoundedJson(text: string, maxDepth: number = MAX_JSON_DEPTH): JsonReading {
  if (openingsUpTo(text, maxDepth) > maxDepth && nestsDeeperThan(text, maxDepth)) return tooDeep(maxDepth);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refused('not-json');
  }
  const problem = problemIn(value);
  return problem === undefined ? { ok: true, value } : refused(problem);
}
