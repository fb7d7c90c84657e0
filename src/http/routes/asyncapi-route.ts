import type Router from '@koa/router';
import type { JsonObject } from '../../json/json-value.js';
import type { GatewayState } from '../state.js';

/** GET /asyncapi.json: the AsyncAPI document of the gateway's Kafka topics (src/asyncapi/), built once from schemas/ by the composition root; it needs no credentials. */
export function registerAsyncApiRoute(router: Router<GatewayState>, built: JsonObject): void {
  const document = JSON.stringify(built);
  router.get('/asyncapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = document;
  });
}
