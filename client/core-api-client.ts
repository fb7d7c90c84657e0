import { createDevicesApi, type DevicesApi } from './devices.js';
import { createEdgePolicyApi, type EdgePolicyApi } from './edge-policy.js';
import { createEventsApi, type EventsApi } from './events.js';
import { resolveRetryPolicy, type RetryOptions } from './retry.js';
import { createTransport, type FetchLike, type TokenSource } from './transport.js';

export interface CoreApiClientOptions {
  /** The gateway's origin, e.g. `https://gateway.example.com`; the client adds /core/api/v1. */
  readonly baseUrl: string;
  /** The bearer token, or a function the client asks before every request (and every retry), so a refreshed token is used. */
  readonly token: TokenSource;
  /** The organization every call acts for, sent as ORG-ID. */
  readonly orgId: string;
  /** Node's global fetch unless given. */
  readonly fetch?: FetchLike;
  readonly retry?: RetryOptions;
}

/** The Core HTTP API v1 as typed calls: the event feed, device enrollment and the fleet edge policy. */
export interface CoreApiClient {
  readonly events: EventsApi;
  readonly devices: DevicesApi;
  readonly edgePolicy: EdgePolicyApi;
}

export function createCoreApiClient(options: CoreApiClientOptions): CoreApiClient {
  if (typeof options.token !== 'string' && typeof options.token !== 'function') throw new TypeError('token must be a string or a function returning one');
  if (typeof options.orgId !== 'string' || options.orgId === '') throw new TypeError('orgId must be a non-empty string');
  const send = createTransport({
    baseUrl: options.baseUrl,
    token: options.token,
    orgId: options.orgId,
    // Looked up per call rather than captured, so the global is read when it is used.
    fetch: options.fetch ?? ((url, init) => globalThis.fetch(url, init)),
    retry: resolveRetryPolicy(options.retry),
  });
  return {
    events: createEventsApi(send),
    devices: createDevicesApi(send),
    edgePolicy: createEdgePolicyApi(send),
  };
}
