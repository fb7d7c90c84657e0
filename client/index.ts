export { createCoreApiClient, type CoreApiClient, type CoreApiClientOptions } from './core-api-client.js';
export type { DevicesApi, EnrollOptions } from './devices.js';
export type { EdgePolicyApi } from './edge-policy.js';
export type { EventFilters, EventPage, EventsApi } from './events.js';
export { CoreApiError } from './errors.js';
export { DEFAULT_RETRY, parseRetryAfter, backoffDelay, type RetryOptions, type Sleep } from './retry.js';
export { API_PREFIX, type CallOptions, type FetchLike, type TokenSource } from './transport.js';
export type {
  CanonicalEvent,
  CursorPaginationMeta,
  EdgePolicyAccepted,
  EdgePolicyPatch,
  EnrollmentAccepted,
  EnrollmentRequest,
  ErrorEnvelope,
  EventsQuery,
} from '../src/generated/schema-types.js';
