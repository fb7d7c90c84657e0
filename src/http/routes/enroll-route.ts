import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import type { EnrollDevice } from '../../commands/enroll-device.js';
import { allValid, validationError, type SchemaRegistry } from '../../schemas/schema-registry.js';
import { authenticate } from '../authenticate.js';
import { success } from '../envelope.js';
import { jsonBody } from '../json-body.js';
import { commandContextOf } from '../request-context.js';
import type { GatewayState } from '../state.js';

// Printable ASCII, as the IETF Idempotency-Key draft suggests; long enough for a UUID or a hash.
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

function idempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) {
    throw validationError({ 'header.idempotency-key': 'must be 1 to 255 printable ASCII characters' });
  }
  return header;
}

export function registerEnrollRoute(
  router: Router<GatewayState>,
  deps: { verifier: TokenVerifier; schemas: SchemaRegistry; enroll: EnrollDevice; rateLimit: Middleware<GatewayState> },
): void {
  router.post(
    '/projects/:project_id/fleets/:fleet_id/devices/:device_id/enroll',
    authenticate(deps.verifier, 'devices:enroll'),
    deps.rateLimit,
    jsonBody(),
    async (ctx) => {
      const [path, , body] = allValid(
        deps.schemas.check('device-path.schema.json', { ...ctx.params }, 'path'),
        deps.schemas.check('no-query.schema.json', { ...ctx.query }, 'query'),
        // Every body field is optional, so no body at all is an empty enrollment request.
        deps.schemas.check('enrollment-request.schema.json', ctx.request.body === undefined ? {} : ctx.request.body, 'body'),
      );
      const accepted = await deps.enroll({
        context: commandContextOf(ctx.state),
        path: {
          project_id: path.project_id.toLowerCase(),
          fleet_id: path.fleet_id.toLowerCase(),
          device_id: path.device_id.toLowerCase(),
        },
        body,
        idempotencyKey: idempotencyKey(ctx.headers['idempotency-key']),
      });
      ctx.state.commandId = accepted.enrollment_id;
      ctx.status = 202;
      ctx.body = success(accepted);
    },
  );
}
