import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import type { CatalogueEntry } from '../../commands/catalogue.js';
import { COMMAND_BODY_MAX_DEPTH, pathParameters } from '../../commands/command-entry.js';
import type { CommandHandler } from '../../commands/command-handler.js';
import { parseIdempotencyKey } from '../../commands/idempotency-key.js';
import { allValid, type CheckResult, type SchemaRegistry } from '../../schemas/schema-registry.js';
import { authenticate } from '../authenticate.js';
import { success } from '../envelope.js';
import { jsonBody } from '../json-body.js';
import { commandContextOf } from '../request-context.js';
import type { GatewayState } from '../state.js';

/**
 * The route of one catalogue entry: authenticate with its permission, spend the rate
 * limit, validate path, query and body with its schemas, and hand the request to its
 * command handler. Every command answers the same way for the same faults.
 */
export function registerCommandRoute(
  router: Router<GatewayState>,
  entry: CatalogueEntry,
  deps: { verifier: TokenVerifier; schemas: SchemaRegistry; handle: CommandHandler; rateLimit: Middleware<GatewayState> },
): void {
  const parameters = pathParameters(entry);
  const { absentBody } = entry.http;
  router[entry.http.method](entry.http.path, authenticate(deps.verifier, entry.permission), deps.rateLimit, jsonBody(COMMAND_BODY_MAX_DEPTH), async (ctx) => {
    const sent: unknown = ctx.request.body;
    const [path, , body] = allValid(
      deps.schemas.check(entry.schemas.path, { ...ctx.params }, 'path'),
      deps.schemas.check('no-query.schema.json', { ...ctx.query }, 'query'),
      sent === undefined && 'refusal' in absentBody
        ? ({ ok: false, fields: { body: absentBody.refusal } } satisfies CheckResult<never>)
        : deps.schemas.check(entry.schemas.request, sent === undefined && 'value' in absentBody ? absentBody.value : sent, 'body'),
    );
    const validPath: Readonly<Record<string, string>> = { ...path };
    const { commandId, response } = await deps.handle({
      context: commandContextOf(ctx.state),
      // Ids are uuids, compared as the feed stores them: lower case.
      path: Object.fromEntries(parameters.map((name) => [name, validPath[name]!.toLowerCase()])),
      body,
      idempotencyKey: entry.idempotency === undefined ? undefined : parseIdempotencyKey(ctx.headers['idempotency-key']),
    });
    ctx.state.commandId = commandId;
    ctx.status = entry.http.status;
    ctx.body = success(response);
  });
}
