import type { Principal } from '../auth/principal.js';

/** What middleware leaves on ctx.state for the routes. */
export interface GatewayState {
  /** Set by authenticate(): the verified caller and the organization named by ORG-ID. */
  auth?: { readonly principal: Principal; readonly orgId: string };
}
