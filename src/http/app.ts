import Router from '@koa/router';
import Koa from 'koa';
import type { TokenVerifier } from '../auth/token-verifier.js';
import { catalogue, type CommandName } from '../commands/catalogue.js';
import type { CommandHandler } from '../commands/command-handler.js';
import type { FeedService } from '../feed/pages/feed-service.js';
import type { LiveTail } from '../feed/tail/live-tail.js';
import type { Logger } from '../observability/logger.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import type { JsonObject } from '../json/json-value.js';
import type { ReadinessProbe } from '../observability/readiness.js';
import type { SchemaRegistry } from '../schemas/schema-registry.js';
import { authFailureGuard } from './auth-failure-guard.js';
import type { ClientAddressOf } from './client-address.js';
import { errorHandler, unmatchedRoutes } from './error-response.js';
import { httpMetrics } from './http-metrics.js';
import { requestContext } from './request-context.js';
import { registerCommandRoute } from './routes/command-route.js';
import { registerEventsRoute } from './routes/events-route.js';
import { registerEventsStreamRoute } from './routes/events-stream-route.js';
import { registerOpsRoutes } from './routes/ops-routes.js';
import { registerOpenApiRoute } from './routes/openapi-route.js';
import { registerAsyncApiRoute } from './routes/asyncapi-route.js';
import type { OrgRateLimiter } from './org-rate-limiter.js';
import { rateLimit } from './rate-limit.js';
import type { GatewayState } from './state.js';

export const API_PREFIX = '/core/api/v1';

export interface ApiDependencies {
  readonly verifier: TokenVerifier;
  readonly schemas: SchemaRegistry;
  readonly feed: FeedService;
  readonly liveTail: LiveTail;
  /** The handler of each catalogue entry. */
  readonly commands: Readonly<Record<CommandName, CommandHandler>>;
  /** The per-organization rate limit of the feed and each command; undefined is no limit. */
  readonly rateLimiter: OrgRateLimiter | undefined;
  /** Failed authentications per client address (AUTH_FAILURES_*), and who the client is; undefined is no limit. */
  readonly authFailures: { readonly limiter: OrgRateLimiter; readonly clientAddressOf: ClientAddressOf } | undefined;
  /** The OpenAPI and AsyncAPI documents served at /openapi.json and /asyncapi.json, built above http/ (src/openapi/, src/asyncapi/). */
  readonly documents: { readonly openApi: JsonObject; readonly asyncApi: JsonObject };
}

export interface AppDependencies {
  readonly logger: Logger;
  /** What /readyz checks: the store, and Kafka when the process uses it. */
  readonly readiness: readonly ReadinessProbe[];
  readonly metrics: GatewayMetrics;
  /** Whether /healthz, /readyz and /metrics are served here; false when they have a port of their own (OPS_PORT). */
  readonly withOpsRoutes: boolean;
  /** The Core API; absent in a consumer-only process, which serves health only. */
  readonly api: ApiDependencies | undefined;
}

/** The HTTP surface: request → authenticate → validate → act → envelope. Holds no state of its own. */
export function createApp(deps: AppDependencies): Koa<GatewayState> {
  const app = new Koa<GatewayState>();
  // Koa would otherwise print every error it sees; ours are answered and logged in errorHandler.
  app.silent = true;

  const ops = new Router<GatewayState>();
  if (deps.withOpsRoutes) registerOpsRoutes(ops, deps.readiness, deps.metrics);
  const api = new Router<GatewayState>({ prefix: API_PREFIX });
  if (deps.api !== undefined) {
    if (deps.api.authFailures !== undefined) api.use(authFailureGuard(deps.api.authFailures.limiter, deps.api.authFailures.clientAddressOf));
    registerOpenApiRoute(api, deps.api.documents.openApi);
    registerAsyncApiRoute(api, deps.api.documents.asyncApi);
    // The feed, each command and opening a live tail spend the organization's tokens (RATE_LIMIT_PER_ORG).
    const limited = { ...deps.api, rateLimit: rateLimit(deps.api.rateLimiter, deps.metrics) };
    registerEventsRoute(api, limited);
    registerEventsStreamRoute(api, limited);
    for (const entry of catalogue) registerCommandRoute(api, entry, { ...limited, handle: deps.api.commands[entry.name] });
  }

  app.use(requestContext(deps.logger));
  app.use(httpMetrics(deps.metrics));
  app.use(errorHandler(deps.logger));
  app.use(unmatchedRoutes());
  for (const router of [ops, api]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
