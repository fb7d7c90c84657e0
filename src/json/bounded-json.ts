import { AppError } from '../errors/app-error.js';
import { validationError } from '../schemas/schema-registry.js';

/** Deepest nesting of arrays and objects a request body may have; a top-level `{}` is depth 1. */
export const MAX_JSON_DEPTH = 32;

/**
 * Whether the text nests arrays and objects deeper than `max`. One pass over the text,
 * before JSON.parse: a 64 KiB body can nest 32,000 levels, and everything downstream
 * that walks a value (serializing it for Kafka, fingerprinting it for idempotency,
 * validating it) recurses, so such a body must never become a value at all.
 */
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

const malformed = (detail: string, cause?: unknown) =>
  new AppError('MALFORMED_JSON', 'Malformed JSON', { detail, ...(cause === undefined ? {} : { cause }) });

/**
 * Parses a request body's JSON text, refusing what would parse but must not be taken:
 * nesting deeper than MAX_JSON_DEPTH, a `__proto__` key (a prototype-pollution vector
 * for any code that later copies the value with assignment), and numbers beyond a
 * double's range, which JSON.parse turns into Infinity and JSON.stringify then sends on
 * as null; in a merge patch that would silently delete the field.
 */
export function parseBoundedJson(text: string): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw validationError({ body: `must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels` });
  }
  try {
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__') throw malformed('The request body has a "__proto__" key.');
      if (typeof value === 'number' && !Number.isFinite(value)) {
        throw validationError({ body: 'must not hold a number beyond the range of a double (about 1.8e308)' });
      }
      return value;
    });
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw malformed('The request body is not valid JSON.', error);
  }
}
