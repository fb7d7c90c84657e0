import Router from '@koa/router';
import Koa from 'koa';
import type { TokenVerifier } from '../auth/token-verifier.js';
import type { EnrollDevice } from '../commands/enroll-device.js';
import type { UpdateEdgePolicy } from '../commands/update-edge-policy.js';
import type { FeedService } from '../feed/feed-service.js';
import type { Logger } from '../logger.js';
import type { ReadinessProbe } from '../readiness.js';
import type { SchemaRegistry } from '../schemas/schema-registry.js';
import { errorHandler, unmatchedRoutes } from './error-response.js';
import { registerEdgePolicyRoute } from './routes/edge-policy-route.js';
import { registerEnrollRoute } from './routes/enroll-route.js';
import { registerEventsRoute } from './routes/events-route.js';
import { registerHealthRoutes } from './routes/health-route.js';
import { registerOpenApiRoute } from './routes/openapi-route.js';
import type { GatewayState } from './state.js';

export const API_PREFIX = '/core/api/v1';

export interface ApiDependencies {
  readonly verifier: TokenVerifier;
  readonly schemas: SchemaRegistry;
  readonly feed: FeedService;
  readonly enroll: EnrollDevice;
  readonly updateEdgePolicy: UpdateEdgePolicy;
}

export interface AppDependencies {
  readonly logger: Logger;
  /** What /readyz checks: the store, and Kafka when the process uses it. */
  readonly readiness: readonly ReadinessProbe[];
  /** The Core API; absent in a consumer-only process, which serves health only. */
  readonly api: ApiDependencies | undefined;
}

/** The HTTP surface: request → authenticate → validate → act → envelope. Holds no state of its own. */
export function createApp(deps: AppDependencies): Koa<GatewayState> {
  const app = new Koa<GatewayState>();
  // Koa would otherwise print every error it sees; ours are answered and logged in errorHandler.
  app.silent = true;

  const health = new Router<GatewayState>();
  registerHealthRoutes(health, deps.readiness);
  const api = new Router<GatewayState>({ prefix: API_PREFIX });
  if (deps.api !== undefined) {
    registerOpenApiRoute(api);
    registerEventsRoute(api, deps.api);
    registerEnrollRoute(api, deps.api);
    registerEdgePolicyRoute(api, deps.api);
  }

  app.use(errorHandler(deps.logger));
  app.use(unmatchedRoutes());
  for (const router of [health, api]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
