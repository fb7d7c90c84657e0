import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { createHash } from 'node:crypto';
import type { FeedService } from '../../feed/pages/feed-service.js';
import { allValid, validationError, type SchemaRegistry } from '../../schemas/schema-registry.js';
import { TimestampError, toStoreTimestamp } from '../../store/timestamps.js';
import { authenticate, authOf } from '../authenticate.js';
import { success } from '../envelope.js';
import type { GatewayState } from '../state.js';
import { eventFilters } from './event-filters.js';
import type { TokenVerifier } from '../../auth/token-verifier.js';

export function registerEventsRoute(
  router: Router<GatewayState>,
  deps: { verifier: TokenVerifier; schemas: SchemaRegistry; feed: FeedService; rateLimit: Middleware<GatewayState> },
): void {
  router.get('/projects/:project_id/events', authenticate(deps.verifier, 'events:read'), deps.rateLimit, async (ctx) => {
    const { orgId } = authOf(ctx.state);
    const [path, query] = allValid(
      deps.schemas.check('project-path.schema.json', { ...ctx.params }, 'path'),
      deps.schemas.check('events-query.schema.json', { ...ctx.query }, 'query'),
    );
    const page = await deps.feed.listEvents({
      orgId,
      projectId: path.project_id.toLowerCase(),
      filters: {
        ...eventFilters(query),
        since: timeBound(query.since, 'since'),
        until: timeBound(query.until, 'until'),
      },
      cursor: query.cursor,
      limit: query.limit,
    });
    // Encoded once, for the ETag and the response alike: Koa would encode an object again.
    const body = JSON.stringify(success({ items: page.items }, page.meta));
    // A poller that sends the page's ETag back gets a 304 until the page changes.
    ctx.set('Cache-Control', 'private, no-cache');
    const etag = pageEtag(body);
    ctx.set('ETag', etag);
    if (noneMatch(ctx.get('If-None-Match'), etag)) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/json';
    ctx.body = body;
  });
}

/** A time bound in the store's timestamp text; outside what the store can hold, or not RFC 3339, it is a 400 naming the parameter. */
function timeBound(value: string | undefined, name: 'since' | 'until'): string | undefined {
  if (value === undefined) return undefined;
  try {
    return toStoreTimestamp(value);
  } catch (error) {
    if (error instanceof TimestampError) throw validationError({ [`query.${name}`]: error.message });
    throw error;
  }
}

/**
 * Whether If-None-Match names this ETag (weak comparison, RFC 9110 13.1.2). Koa's
 * ctx.fresh would also honour a request's Cache-Control: no-cache, which is a cache's
 * rule, not an origin's; and fetch() adds exactly that header to every request that
 * carries If-None-Match, so a poller using fetch would never get its 304.
 */
function noneMatch(header: string, etag: string): boolean {
  if (header === '') return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === opaque(etag));
}

function pageEtag(body: string): string {
  return `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}
