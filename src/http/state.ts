import type { Principal } from '../auth/principal.js';
import type { AuthGuard } from './auth-guard.js';
import type { Logger } from '../observability/logger.js';
import type { TraceContext } from '../observability/trace-context.js';

/** Set by requestContext() on every request. */
export interface RequestContext {
  /** The caller's X-Request-Id or a generated one; returned, logged and carried into commands. */
  readonly requestId: string;
  /** The request's W3C trace context, when it carried a valid traceparent. */
  readonly trace: TraceContext | undefined;
  /** Logs with the request id (and trace id) on every line. */
  readonly log: Logger;
}

/** What middleware leaves on ctx.state for the routes. */
export interface GatewayState {
  request?: RequestContext;
  /** Set by authFailureGuard() on the API's routes: the client's failed-authentication limit. */
  authGuard?: AuthGuard;
  /** Set by authenticate(): the verified caller and the organization named by ORG-ID. */
  auth?: { readonly principal: Principal; readonly orgId: string };
  /** Set by a command route once its command is accepted, for the access log line. */
  commandId?: string;
}
