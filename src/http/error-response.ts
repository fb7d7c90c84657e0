import type { Middleware } from 'koa';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, isAppError, type ErrorCode } from '../errors/app-error.js';
import type { ErrorEnvelope } from '../generated/schema-types.js';
import type { Logger } from '../observability/logger.js';
import { createRepeatedCondition, type RepeatedCondition } from '../observability/repeated-condition.js';
import { failure } from './envelope.js';
import { matchedRoute } from './matched-route.js';
import type { GatewayState } from './state.js';

export interface ErrorResponse {
  readonly status: number;
  readonly body: ErrorEnvelope;
  readonly headers: Readonly<Record<string, string>>;
}

/** Errors thrown by koa-bodyparser (raw-body / co-body) carry a `type`; this is where they are read. */
const BODY_ERRORS: Readonly<Record<string, { code: ErrorCode; message: string; detail: string }>> = {
  'entity.too.large': { code: 'BODY_TOO_LARGE', message: 'Request body too large', detail: 'The request body exceeds the 64 KiB limit.' },
  'entity.parse.failed': { code: 'MALFORMED_JSON', message: 'Malformed JSON', detail: 'The request body is not valid JSON.' },
  'encoding.unsupported': { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported content encoding', detail: 'The request body encoding is not supported.' },
  'charset.unsupported': { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported charset', detail: 'The request body charset is not supported.' },
  'request.aborted': { code: 'MALFORMED_JSON', message: 'Request aborted', detail: 'The request body ended early.' },
  'request.size.invalid': { code: 'MALFORMED_JSON', message: 'Request size mismatch', detail: 'The request body does not match its Content-Length.' },
  'body.undecodable': { code: 'MALFORMED_JSON', message: 'Undecodable body', detail: 'The request body does not match its Content-Encoding.' },
};

// zlib's codes when a gzip or deflate body is not what its Content-Encoding says.
const ZLIB_DATA_ERRORS = new Set(['Z_DATA_ERROR', 'Z_BUF_ERROR', 'Z_STREAM_ERROR']);
// Brotli's decoder errors arrive as ERR__ERROR_FORMAT_..., ERR__ERROR_UNREACHABLE and the like.
const BROTLI_DATA_ERROR = /^ERR__ERROR_/;

function fromBodyParser(error: unknown): AppError | undefined {
  const type = (error as { type?: unknown } | null)?.type;
  const code = (error as { code?: unknown } | null)?.code;
  // co-body rethrows JSON.parse's SyntaxError with status 400 and no type; inflation passes zlib's errors through.
  const key =
    typeof type === 'string'
      ? type
      : error instanceof SyntaxError
        ? 'entity.parse.failed'
        : typeof code === 'string' && (ZLIB_DATA_ERRORS.has(code) || BROTLI_DATA_ERROR.test(code))
          ? 'body.undecodable'
          : undefined;
  if (key === undefined) return undefined;
  const known = BODY_ERRORS[key];
  return known === undefined ? undefined : new AppError(known.code, known.message, { detail: known.detail, cause: error });
}

const INTERNAL_MESSAGE = 'Internal error';
const INTERNAL_DETAIL = 'Internal error.';

/** The one mapping from any thrown value to a status and an error envelope. */
export function toErrorResponse(error: unknown): ErrorResponse {
  const appError = isAppError(error)
    ? error
    : (fromBodyParser(error) ?? new AppError('INTERNAL', INTERNAL_MESSAGE, { detail: INTERNAL_DETAIL, cause: error }));
  const headers: Record<string, string> = {};
  if (appError.code === 'UNAUTHENTICATED') headers['WWW-Authenticate'] = 'Bearer realm="core-api"';
  if (appError.code === 'UPSTREAM_UNAVAILABLE') headers['Retry-After'] = '1';
  // An error that knows when a retry will succeed (the rate limiter does) says so itself.
  if (appError.retryAfterSeconds !== undefined) headers['Retry-After'] = String(Math.max(1, Math.ceil(appError.retryAfterSeconds)));
  // An internal fault's own message and detail are written for the log ("event store failed
  // during insert", a schema verdict on a row we built); the client learns only that it failed.
  if (appError.code === 'INTERNAL') return { status: appError.status, body: failure(INTERNAL_MESSAGE, INTERNAL_DETAIL), headers };
  // A validation failure lists its fields; every other error has a short sentence.
  const message = appError.fields === undefined ? appError.message : appError.fields;
  return { status: appError.status, body: failure(message, appError.detail), headers };
}

export function errorHandler(logger: Logger): Middleware<GatewayState> {
  // A dependency that is down answers every request of a route, /readyz's too, with a 503:
  // logged as one condition a route (docs/decisions/outage-logs.md), which the route's next
  // answer below 500 ends, not as an error with a stack a request.
  const unavailable = new Map<string, RepeatedCondition>();
  const conditionOf = (route: string) => {
    let condition = unavailable.get(route);
    if (condition === undefined) unavailable.set(route, (condition = createRepeatedCondition({ logger, what: `${route} answered 503: a dependency is unavailable` })));
    return condition;
  };
  return async (ctx, next) => {
    try {
      await next();
      const route = matchedRoute(ctx);
      if (route !== undefined) unavailable.get(route)?.ended({ method: ctx.method, status: ctx.status });
    } catch (error) {
      const response = toErrorResponse(error);
      // A 503 outside any route (none is thrown there today) is logged as any other failure.
      const route = matchedRoute(ctx);
      if (response.status === 503 && route !== undefined) conditionOf(route).occurred(error, { method: ctx.method, path: ctx.path });
      else if (response.status >= 500) {
        (ctx.state.request?.log ?? logger).error({ err: error, method: ctx.method, path: ctx.path, status: response.status }, 'request failed');
      }
      ctx.status = response.status;
      ctx.set(response.headers);
      ctx.body = response.body;
    }
  };
}

interface RawAnswer {
  readonly status: number;
  readonly reason: string;
  readonly message: string;
  readonly detail: string;
}

/** What Node's parser and its connection checks report, as what the client is told. */
const CLIENT_ERRORS: Readonly<Record<string, RawAnswer>> = {
  HPE_HEADER_OVERFLOW: { status: 431, reason: 'Request Header Fields Too Large', message: 'Request headers too large', detail: 'The request headers exceed the server limit.' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, reason: 'Payload Too Large', message: 'Request body too large', detail: 'The chunk extensions of the request body exceed the server limit.' },
  // headersTimeout or requestTimeout ran out (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS).
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', message: 'Request timeout', detail: 'The request did not arrive in full within the server time limit.' },
};
const NOT_HTTP: RawAnswer = { status: 400, reason: 'Bad Request', message: 'Bad request', detail: 'The request is not valid HTTP.' };

function writeRawAnswer(socket: Duplex, answer: RawAnswer): void {
  const body = JSON.stringify(failure(answer.message, answer.detail));
  socket.end(
    `HTTP/1.1 ${answer.status} ${answer.reason}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * Requests Node's HTTP parser refuses before Koa sees them (headers over the size limit,
 * malformed request lines, broken chunking) and requests the server's time limits cut
 * off are answered with the envelope too, then the connection closes.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // As Node's own handler does: once an answer on this connection has begun, a second one would corrupt it.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  writeRawAnswer(socket, CLIENT_ERRORS[error.code ?? ''] ?? NOT_HTTP);
}

/** CONNECT asks for a tunnel, which Node hands to the server without a response object; the API has no tunnels. */
export function answerConnect(_request: IncomingMessage, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  writeRawAnswer(socket, { status: 405, reason: 'Method Not Allowed', message: 'Method not allowed', detail: 'CONNECT is not allowed here.' });
}

/** An Expect header other than 100-continue, which Node would otherwise refuse with a bare 417. */
export function answerUnmetExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const body = JSON.stringify(failure('Expectation failed', 'The only expectation the server meets is "100-continue".'));
  response.writeHead(417, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
  response.end(body);
}

/** Turns what the router leaves unanswered (no route, wrong method) into error envelopes. */
export function unmatchedRoutes(): Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.body !== undefined && ctx.body !== null) return;
    // The router answers a method it has never heard of (PROPFIND, say) with a bare 501;
    // for the client it is a 405 where the path has routes and a 404 where it has none.
    if (ctx.status === 501) {
      const routed = ctx.response.get('Allow') !== '';
      if (!routed) ctx.remove('Allow');
      ctx.status = routed ? 405 : 404;
    }
    if (ctx.status === 405) {
      throw new AppError('METHOD_NOT_ALLOWED', 'Method not allowed', {
        detail: `${ctx.method} is not allowed here; allowed: ${String(ctx.response.get('Allow'))}.`,
      });
    }
    if (ctx.status === 404) {
      throw new AppError('NOT_FOUND', 'Not found', { detail: `No route for ${ctx.method} ${ctx.path}.` });
    }
  };
}
