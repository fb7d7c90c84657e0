/**
 * What authenticate() asks before it spends a key operation, and tells after a 401.
 * authFailureGuard() (src/http/auth-failure-guard.ts) puts one on ctx.state; its own file
 * so that state.ts, which names it, and the middleware, which reads the state, do not
 * import each other.
 */
export interface AuthGuard {
  /** Throws RATE_LIMITED (429, Retry-After) while the client's failures are used up. */
  admit(): void;
  /** Counts one failed authentication against the client. */
  failed(): void;
}
