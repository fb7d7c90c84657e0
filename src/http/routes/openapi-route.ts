import type Router from '@koa/router';
import type { JsonObject } from '../../json/json-value.js';
import type { GatewayState } from '../state.js';

/** GET /openapi.json: the API's OpenAPI document (src/openapi/), built once from schemas/ by the composition root; it needs no credentials. */
export function registerOpenApiRoute(router: Router<GatewayState>, built: JsonObject): void {
  const document = JSON.stringify(built);
  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = document;
  });
}
