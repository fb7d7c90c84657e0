import type Router from '@koa/router';
import type { FeedService } from '../../feed/feed-service.js';
import { allValid, type SchemaRegistry } from '../../schemas/schema-registry.js';
import { authenticate, authOf } from '../authenticate.js';
import { success } from '../envelope.js';
import type { GatewayState } from '../state.js';
import type { TokenVerifier } from '../../auth/token-verifier.js';

export function registerEventsRoute(
  router: Router<GatewayState>,
  deps: { verifier: TokenVerifier; schemas: SchemaRegistry; feed: FeedService },
): void {
  router.get('/projects/:project_id/events', authenticate(deps.verifier, 'events:read'), async (ctx) => {
    const { orgId } = authOf(ctx.state);
    const [path, query] = allValid(
      deps.schemas.check('project-path.schema.json', { ...ctx.params }, 'path'),
      deps.schemas.check('events-query.schema.json', { ...ctx.query }, 'query'),
    );
    const page = await deps.feed.listEvents({
      orgId,
      projectId: path.project_id.toLowerCase(),
      filters: {
        domain: query.domain,
        entity: query.entity,
        action: query.action,
        deviceId: query.device_id?.toLowerCase(),
        fleetId: query.fleet_id?.toLowerCase(),
      },
      cursor: query.cursor,
      limit: query.limit,
    });
    ctx.body = success({ items: page.items }, page.meta);
  });
}
