import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { PassThrough } from 'node:stream';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import type { LiveTail } from '../../feed/tail/live-tail.js';
import { decodeTailPosition } from '../../feed/tail/tail-position.js';
import { allValid, type CheckResult, type SchemaRegistry } from '../../schemas/schema-registry.js';
import type { TailPosition } from '../../store/event-store.js';
import { authenticate, authOf } from '../authenticate.js';
import { requestOf } from '../request-context.js';
import { createSseSink } from '../sse-sink.js';
import { eventFilters } from './event-filters.js';
import type { GatewayState } from '../state.js';

/** What the stream tells an EventSource to wait before reconnecting. */
export const SSE_RETRY_MS = 2000;

/** Last-Event-ID as a position; absent or empty is "start with new events". */
function resumePosition(header: string): CheckResult<TailPosition | undefined> {
  if (header === '') return { ok: true, value: undefined };
  const position = decodeTailPosition(header.trim());
  if (position === undefined) return { ok: false, fields: { 'header.Last-Event-ID': 'is not an event id sent by this stream' } };
  return { ok: true, value: position };
}

/**
 * The live tail (an extension beyond v1, docs/decisions/live-tail.md). The body is a
 * PassThrough rather than ctx.res with ctx.respond = false: Koa still sends the status
 * and headers, the metrics and error middleware see a normal 200, and Koa destroys the
 * body when the client goes away, which is what stops the poll loop. Everything that can
 * fail (credentials, the rate limit, parameters, Last-Event-ID, the caps per caller,
 * organization and process, the store's clock) fails before the first byte, so it is answered with the error envelope.
 */
export function registerEventsStreamRoute(
  router: Router<GatewayState>,
  deps: { verifier: TokenVerifier; schemas: SchemaRegistry; liveTail: LiveTail; rateLimit: Middleware<GatewayState> },
): void {
  // Opening a stream spends one of the organization's request tokens, like any other read.
  router.get('/projects/:project_id/events/stream', authenticate(deps.verifier, 'events:read'), deps.rateLimit, async (ctx) => {
    const { orgId, principal } = authOf(ctx.state);
    const [path, query, after] = allValid(
      deps.schemas.check('project-path.schema.json', { ...ctx.params }, 'path'),
      deps.schemas.check('events-stream-query.schema.json', { ...ctx.query }, 'query'),
      resumePosition(ctx.get('Last-Event-ID')),
    );
    const body = new PassThrough();
    const tail = await deps.liveTail.start(
      {
        orgId,
        caller: principal.subject,
        projectId: path.project_id.toLowerCase(),
        filters: eventFilters(query),
        after,
        log: requestOf(ctx.state).log,
      },
      createSseSink(body, SSE_RETRY_MS),
    );
    body.once('close', () => tail.stop());
    ctx.set({
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      // nginx and its kin would otherwise buffer the stream and deliver it in lumps.
      'X-Accel-Buffering': 'no',
      // A finished stream's connection is not worth keeping: closing it lets a shutdown finish at once.
      Connection: 'close',
    });
    ctx.status = 200;
    ctx.body = body;
    ctx.flushHeaders();
  });
}
