import type { Context } from 'koa';

/** The route template @koa/router matched (`/core/api/v1/projects/:project_id/events`), or undefined: its field is not in the router's types. */
export function matchedRoute(ctx: Context): string | undefined {
  const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
  return typeof route === 'string' ? route : undefined;
}
