import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { CommandContext } from '../commands/command-context.js';
import type { Logger } from '../observability/logger.js';
import { parseTraceparent } from '../observability/trace-context.js';
import { authOf } from './authenticate.js';
import type { GatewayState, RequestContext } from './state.js';
import { matchedRoute } from './matched-route.js';

export const REQUEST_ID_HEADER = 'X-Request-Id';

// Ids from a proxy or a client are kept when they are short and printable, so that one id
// runs through their logs and ours; anything else could forge or flood log lines.
export const CALLER_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && CALLER_REQUEST_ID.test(header) ? header : randomUUID();
}

// Probes and scrapes arrive every few seconds; at info they would drown the requests.
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Gives every request an id (the caller's X-Request-Id, or a new one), returns it, and
 * hands the routes a logger that puts it, and the W3C trace id when there is one, on every
 * line. One access line per request closes it. The same id travels in a command's
 * `request-id` header to the consumer that stores its event, so one grep follows it.
 */
export function requestContext(logger: Logger): Middleware<GatewayState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const requestId = requestIdFrom(ctx.headers['x-request-id']);
    const trace = parseTraceparent(ctx.headers.traceparent);
    // pino's child() serializes and redacts its bindings at once; most requests log nothing
    // below the access line (and nothing at all at LOG_LEVEL=warn), so the child is made on first use.
    let log: Logger | undefined;
    const bindings = () => ({ requestId, ...(trace === undefined ? {} : { traceId: trace.traceId }) });
    ctx.state.request = {
      requestId,
      trace,
      get log() {
        return (log ??= logger.child(bindings()));
      },
    };
    ctx.set(REQUEST_ID_HEADER, requestId);
    try {
      await next();
    } finally {
      const level = QUIET_PATHS.has(ctx.path) ? 'debug' : 'info';
      if (logger.isLevelEnabled(level)) {
        const line = {
          method: ctx.method,
          path: ctx.path,
          route: matchedRoute(ctx),
          status: ctx.status,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6,
          ...(ctx.state.auth === undefined ? {} : { orgId: ctx.state.auth.orgId, subject: ctx.state.auth.principal.subject }),
          ...(ctx.state.commandId === undefined ? {} : { commandId: ctx.state.commandId }),
        };
        // The same fields as the child's lines, without making a child for this one line.
        if (log === undefined) logger[level]({ ...bindings(), ...line }, 'request');
        else log[level](line, 'request');
      }
    }
  };
}

/** The request's id, trace and logger, for anything behind requestContext(). */
export function requestOf(state: GatewayState): RequestContext {
  if (state.request === undefined) throw new Error('request is not behind requestContext()');
  return state.request;
}

/** What a command handler is told about the request that asked for it. */
export function commandContextOf(state: GatewayState): CommandContext {
  const { principal, orgId } = authOf(state);
  const { requestId, trace } = requestOf(state);
  return { orgId, requestedBy: principal.subject, trace, requestId };
}
