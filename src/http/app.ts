import Router from '@koa/router';
import Koa from 'koa';
import type { TokenVerifier } from '../auth/token-verifier.js';
import type { EnrollDevice } from '../commands/enroll-device.js';
import type { UpdateEdgePolicy } from '../commands/update-edge-policy.js';
import type { FeedService } from '../feed/feed-service.js';
import type { Logger } from '../logger.js';
import type { SchemaRegistry } from '../schemas/schema-registry.js';
import { errorHandler, unmatchedRoutes } from './error-response.js';
import { registerEdgePolicyRoute } from './routes/edge-policy-route.js';
import { registerEnrollRoute } from './routes/enroll-route.js';
import { registerEventsRoute } from './routes/events-route.js';
import type { GatewayState } from './state.js';

export const API_PREFIX = '/core/api/v1';

export interface AppDependencies {
  readonly logger: Logger;
  readonly verifier: TokenVerifier;
  readonly schemas: SchemaRegistry;
  readonly feed: FeedService;
  readonly enroll: EnrollDevice;
  readonly updateEdgePolicy: UpdateEdgePolicy;
}

/** The HTTP surface: request → authenticate → validate → act → envelope. Holds no state of its own. */
export function createApp(deps: AppDependencies): Koa<GatewayState> {
  const app = new Koa<GatewayState>();
  // Koa would otherwise print every error it sees; ours are answered and logged in errorHandler.
  app.silent = true;

  const router = new Router<GatewayState>({ prefix: API_PREFIX });
  registerEventsRoute(router, deps);
  registerEnrollRoute(router, deps);
  registerEdgePolicyRoute(router, deps);

  app.use(errorHandler(deps.logger));
  app.use(unmatchedRoutes());
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
