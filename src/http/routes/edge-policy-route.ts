import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import type { UpdateEdgePolicy } from '../../commands/update-edge-policy.js';
import { allValid, type SchemaRegistry } from '../../schemas/schema-registry.js';
import { authenticate } from '../authenticate.js';
import { success } from '../envelope.js';
import { jsonBody } from '../json-body.js';
import { commandContextOf } from '../request-context.js';
import type { GatewayState } from '../state.js';

export function registerEdgePolicyRoute(
  router: Router<GatewayState>,
  deps: { verifier: TokenVerifier; schemas: SchemaRegistry; updateEdgePolicy: UpdateEdgePolicy; rateLimit: Middleware<GatewayState> },
): void {
  router.patch(
    '/projects/:project_id/fleets/:fleet_id/edge/policy',
    authenticate(deps.verifier, 'edge-policy:write'),
    deps.rateLimit,
    jsonBody(),
    async (ctx) => {
      const [path, , patch] = allValid(
        deps.schemas.check('fleet-path.schema.json', { ...ctx.params }, 'path'),
        deps.schemas.check('no-query.schema.json', { ...ctx.query }, 'query'),
        ctx.request.body === undefined
          ? { ok: false, fields: { body: 'is required: a JSON Merge Patch object' } }
          : deps.schemas.check('edge-policy-patch.schema.json', ctx.request.body, 'body'),
      );
      const accepted = await deps.updateEdgePolicy({
        context: commandContextOf(ctx.state),
        path: { project_id: path.project_id.toLowerCase(), fleet_id: path.fleet_id.toLowerCase() },
        patch,
      });
      ctx.state.commandId = accepted.command_id;
      ctx.body = success(accepted);
    },
  );
}
