import bodyParser from 'koa-bodyparser';
import type { Middleware } from 'koa';
import { AppError } from '../errors.js';

export const BODY_LIMIT = '64kb';
const JSON_TYPES = ['application/json', 'application/merge-patch+json'];

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return typeof length === 'string' && length !== '0';
}

/**
 * Parses a JSON body into ctx.request.body, leaving it undefined when the request has
 * none. A body of another media type is a 415; any JSON value parses, and the route's
 * schema decides what it accepts, so that every rejection reads the same way.
 */
export function jsonBody(): Middleware {
  const parse = bodyParser({
    enableTypes: ['json'],
    extendTypes: { json: JSON_TYPES },
    jsonLimit: BODY_LIMIT,
    strict: false,
    onerror: (error) => {
      throw error;
    },
  });
  return async (ctx, next) => {
    if (!hasBody(ctx.headers)) {
      ctx.request.body = undefined;
      return next();
    }
    if (!ctx.is(...JSON_TYPES)) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported media type', {
        detail: 'The request body must be application/json.',
      });
    }
    return parse(ctx, next);
  };
}
