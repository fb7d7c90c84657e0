import type Router from '@koa/router';
import { openApiDocument } from '../../openapi/openapi-document.js';
import type { GatewayState } from '../state.js';

/** GET /openapi.json: the API's OpenAPI document, built once from schemas/; it needs no credentials. */
export function registerOpenApiRoute(router: Router<GatewayState>): void {
  const document = JSON.stringify(openApiDocument());
  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = document;
  });
}
