import type Router from '@koa/router';
import { AppError } from '../../errors/app-error.js';
import { success } from '../envelope.js';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.js';
import { NotReady, type ReadinessProbe } from '../../observability/readiness.js';
import type { GatewayState } from '../state.js';

// A dependency that has not answered by then counts as down: a load balancer's probe must not hang.
const PROBE_DEADLINE_MS = 2000;

async function failureOf(probe: ReadinessProbe): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<string>((done) => (timer = setTimeout(() => done(`${probe.name} did not answer within ${PROBE_DEADLINE_MS} ms`), PROBE_DEADLINE_MS)));
  try {
    return await Promise.race([
      probe.check().then(
        () => undefined,
        (error: unknown) => (error instanceof NotReady ? `${probe.name}: ${error.message}` : `${probe.name} is not reachable`),
      ),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * /healthz: the process is up. /readyz: every dependency answers, so a load balancer may
 * send it traffic; a 503 names the ones that do not, and nothing more. /metrics: the
 * Prometheus text format. None needs credentials: put them on OPS_PORT to keep them
 * off the public port.
 */
export function registerOpsRoutes(router: Router<GatewayState>, probes: readonly ReadinessProbe[], metrics: GatewayMetrics): void {
  router.get('/metrics', async (ctx) => {
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  router.get('/healthz', (ctx) => {
    ctx.body = success({ status: 'ok' });
  });
  router.get('/readyz', async (ctx) => {
    const failures = (await Promise.all(probes.map(failureOf))).filter((f): f is string => f !== undefined);
    if (failures.length > 0) throw new AppError('UPSTREAM_UNAVAILABLE', 'Not ready', { detail: `Not ready: ${failures.join('; ')}.` });
    ctx.body = success({ status: 'ready', checks: Object.fromEntries(probes.map((p) => [p.name, 'ok'])) });
  });
}
