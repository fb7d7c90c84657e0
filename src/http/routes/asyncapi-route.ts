import type Router from '@koa/router';
import { asyncApiDocument } from '../../asyncapi/asyncapi-document.js';
import type { GatewayState } from '../state.js';

/** GET /asyncapi.json: the AsyncAPI document of the gateway's Kafka topics, built once from schemas/; it needs no credentials. */
export function registerAsyncApiRoute(router: Router<GatewayState>): void {
  const document = JSON.stringify(asyncApiDocument());
  router.get('/asyncapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = document;
  });
}
