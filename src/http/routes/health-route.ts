import type Router from '@koa/router';
import { AppError } from '../../errors.js';
import { success } from '../envelope.js';
import type { GatewayState } from '../state.js';

/** Answers whether the process can do its work now; throws when it cannot. */
export type ReadinessCheck = () => Promise<void>;

/**
 * /healthz: the process is up. /readyz: its dependencies answer, so a load balancer may
 * send it traffic. Neither needs credentials, and neither says more than ok or not.
 */
export function registerHealthRoutes(router: Router<GatewayState>, ready: ReadinessCheck): void {
  router.get('/healthz', (ctx) => {
    ctx.body = success({ status: 'ok' });
  });
  router.get('/readyz', async (ctx) => {
    try {
      await ready();
    } catch (error) {
      throw new AppError('UPSTREAM_UNAVAILABLE', 'Not ready', { detail: 'A dependency is not reachable.', cause: error });
    }
    ctx.body = success({ status: 'ready' });
  });
}
