import bodyParser from 'koa-bodyparser';
import type { Middleware } from 'koa';
import { AppError } from '../errors/app-error.js';
import { readBoundedJson } from '../json/bounded-json.js';
import { validationError } from '../schemas/schema-registry.js';

export const BODY_LIMIT_BYTES = 64 * 1024;
/** The media types a body may be sent as; the OpenAPI document lists the same. */
export const JSON_TYPES = ['application/json', 'application/merge-patch+json'] as const;
// What the body reader (inflation) can undo; content codings are case-insensitive (RFC 9110 8.4.1).
const CONTENT_ENCODINGS = new Set(['identity', 'gzip', 'deflate', 'br']);

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return typeof length === 'string' && length !== '0';
}

const tooLarge = () =>
  new AppError('BODY_TOO_LARGE', 'Request body too large', { detail: 'The request body exceeds the 64 KiB limit.' });

/**
 * A Content-Length over the limit is refused before a byte is read. The reader would
 * do so too, but it truncates the header to 32 bits first: 4294967297 became 1, and
 * the request then hung waiting for four gigabytes.
 */
function refuseDeclaredOversize(length: string | undefined): void {
  if (length !== undefined && Number(length) > BODY_LIMIT_BYTES) throw tooLarge();
}

/** Lower-cases the coding in place so that the reader recognises it; an unknown one is a 415. */
function normalizeContentEncoding(headers: Record<string, string | string[] | undefined>): void {
  const raw = headers['content-encoding'];
  if (raw === undefined) return;
  const coding = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (!CONTENT_ENCODINGS.has(coding)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported content encoding', {
      detail: 'The request body must be sent with one of the content codings gzip, deflate, br or identity.',
    });
  }
  headers['content-encoding'] = coding;
}

/**
 * A body's JSON value, or the envelope's error for a text the shared JSON rules refuse:
 * too deep (past `maxDepth` levels) or a number out of range is a body that fails
 * validation, anything else is malformed.
 */
export function parseBodyJson(text: string, maxDepth: number): unknown {
  const reading = readBoundedJson(text, maxDepth);
  if (reading.ok) return reading.value;
  switch (reading.problem) {
    case 'too-deep':
      return reject(validationError({ body: `must not nest arrays and objects deeper than ${maxDepth} levels` }));
    case 'number-out-of-range':
      return reject(validationError({ body: 'must not hold a number beyond the range of a double (about 1.8e308)' }));
    case 'proto-key':
      return reject(new AppError('MALFORMED_JSON', 'Malformed JSON', { detail: 'The request body has a "__proto__" key.' }));
    case 'not-json':
      return reject(new AppError('MALFORMED_JSON', 'Malformed JSON', { detail: 'The request body is not valid JSON.' }));
  }
}

function reject(error: AppError): never {
  throw error;
}

/**
 * Parses a JSON body into ctx.request.body, leaving it undefined when the request has
 * none. A body of another media type is a 415; any JSON value parses, and the route's
 * schema decides what it accepts, so that every rejection reads the same way. The text
 * is read first and parsed by parseBodyJson, which refuses deep nesting before
 * parsing starts.
 */
export function jsonBody(maxDepth: number): Middleware {
  const readText = bodyParser({
    enableTypes: ['text'],
    extendTypes: { text: [...JSON_TYPES] },
    textLimit: `${BODY_LIMIT_BYTES}b`,
    onerror: (error) => {
      throw error;
    },
  });
  return async (ctx, next) => {
    if (!hasBody(ctx.headers)) {
      ctx.request.body = undefined;
      await next();
      return;
    }
    // The common exact header skips type-is's full media-type parse (~2.6% of the command routes' CPU).
    if (ctx.get('Content-Type') !== 'application/json' && !ctx.is(...JSON_TYPES)) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported media type', {
        detail: 'The request body must be application/json.',
      });
    }
    refuseDeclaredOversize(ctx.get('Content-Length') || undefined);
    normalizeContentEncoding(ctx.req.headers);
    await readText(ctx, async () => {
      const text: unknown = ctx.request.body;
      // A chunked body of no bytes is no body, as a Content-Length of 0 is.
      ctx.request.body = typeof text === 'string' && text !== '' ? parseBodyJson(text, maxDepth) : undefined;
      await next();
    });
  };
}
