import type { Middleware } from 'koa';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { matchedRoute } from './matched-route.js';

/**
 * Times every request by its route template (never the raw path, whose ids would make a
 * series per project) and its final status. It wraps the error handler, so an answered
 * error counts with the status it was answered with.
 */
export function httpMetrics(metrics: GatewayMetrics): Middleware {
  return async (ctx, next) => {
    const stop = metrics.httpDuration.startTimer();
    try {
      await next();
    } finally {
      stop({ method: ctx.method, route: matchedRoute(ctx) ?? 'unmatched', status: String(ctx.status) });
    }
  };
}
