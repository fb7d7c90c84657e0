import { asErrorEnvelope, CoreApiError } from './errors.js';
import { decideAfterAnswer, backoffDelay, RETRYABLE_STATUSES, type RetryPolicy } from './retry.js';

export const API_PREFIX = '/core/api/v1';

/** The part of fetch the client uses; Node's global fetch is one, and so is a test's fake. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** A fixed token, or a function asked before every try, so a refreshed token is picked up even by a retry. */
export type TokenSource = string | (() => string | Promise<string>);

export interface CallOptions {
  /** Sent as X-Request-Id on every try of this call, so the gateway's logs can be matched to it. */
  readonly requestId?: string;
  /** Cancels the call, including a wait between tries. */
  readonly signal?: AbortSignal;
}

export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'PATCH';
  /** Under /core/api/v1, with its query string. */
  readonly path: string;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Whether a failure with no answer (connection refused or reset, a body cut short) may
   * be tried again. Only for calls where a repeat cannot do more than the first did.
   */
  readonly retryOnNetworkError: boolean;
}

/** `data` and `meta` of a success envelope, not yet checked against the operation's type. */
export interface SuccessBody {
  readonly status: number;
  readonly data: unknown;
  readonly meta: unknown;
  readonly requestId: string | undefined;
  readonly attempts: number;
}

export interface TransportOptions {
  readonly baseUrl: string;
  readonly token: TokenSource;
  readonly orgId: string;
  readonly fetch: FetchLike;
  readonly retry: RetryPolicy;
}

export type Send = (request: ApiRequest, options?: CallOptions) => Promise<SuccessBody>;

/**
 * The gateway origin, optionally with a path a proxy mounts it under. A base that already
 * ends in /core/api/v1 is taken as it is, rather than doubling the prefix.
 */
export function apiRoot(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.search !== '' || url.hash !== '') throw new TypeError(`baseUrl must not carry a query or fragment; got ${baseUrl}`);
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${path.endsWith(API_PREFIX) ? path : `${path}${API_PREFIX}`}`;
}

export function createTransport(options: TransportOptions): Send {
  const root = apiRoot(options.baseUrl);
  const policy = options.retry;

  const headersFor = async (request: ApiRequest, callOptions: CallOptions): Promise<Record<string, string>> => {
    const token = typeof options.token === 'string' ? options.token : await options.token();
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: `Bearer ${token}`,
      'org-id': options.orgId,
      ...request.headers,
    };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (callOptions.requestId !== undefined) headers['x-request-id'] = callOptions.requestId;
    return headers;
  };

  return async (request, callOptions = {}) => {
    const url = `${root}${request.path}`;
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    for (let attempt = 1; ; attempt += 1) {
      const init: RequestInit = {
        method: request.method,
        headers: await headersFor(request, callOptions),
        ...(body === undefined ? {} : { body }),
        ...(callOptions.signal === undefined ? {} : { signal: callOptions.signal }),
      };
      let response: Response;
      let text: string;
      try {
        response = await options.fetch(url, init);
        // Read here, so a body cut short counts as the network failure it is.
        text = await response.text();
      } catch (error) {
        if (callOptions.signal?.aborted === true || !request.retryOnNetworkError || attempt >= policy.attempts) throw error;
        await policy.sleep(backoffDelay(attempt, policy), callOptions.signal);
        continue;
      }

      if (response.ok) return successBody(request, response, text, attempt, callOptions);

      if (RETRYABLE_STATUSES.has(response.status)) {
        const decision = decideAfterAnswer(attempt, response.headers.get('retry-after'), policy);
        if (decision.retry) {
          await policy.sleep(decision.delayMs, callOptions.signal);
          continue;
        }
        throw errorFrom(request, response, text, attempt, callOptions, decision.retryAfterMs);
      }
      throw errorFrom(request, response, text, attempt, callOptions, undefined);
    }
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function successBody(request: ApiRequest, response: Response, text: string, attempts: number, callOptions: CallOptions): SuccessBody {
  const parsed = parseJson(text);
  if (typeof parsed === 'object' && parsed !== null && (parsed as { ok?: unknown }).ok === 1 && 'data' in parsed) {
    const { data, meta } = parsed as { data: unknown; meta?: unknown };
    return { status: response.status, data, meta: meta ?? null, requestId: response.headers.get('x-request-id') ?? callOptions.requestId, attempts };
  }
  // A 2xx that is not the success envelope (a proxy's page, a truncated body) must not pass for data.
  throw new CoreApiError({
    status: response.status,
    method: request.method,
    path: request.path,
    envelope: undefined,
    requestId: response.headers.get('x-request-id') ?? callOptions.requestId,
    retryAfterMs: undefined,
    attempts,
    reason: 'not the success envelope',
  });
}

function errorFrom(
  request: ApiRequest,
  response: Response,
  text: string,
  attempts: number,
  callOptions: CallOptions,
  retryAfterMs: number | undefined,
): CoreApiError {
  return new CoreApiError({
    status: response.status,
    method: request.method,
    path: request.path,
    envelope: asErrorEnvelope(parseJson(text)),
    requestId: response.headers.get('x-request-id') ?? callOptions.requestId,
    retryAfterMs,
    attempts,
  });
}

/**
 * The client does not validate answers against the schemas (that would need a validator
 * at run time); it checks the few fields it relies on, so a foreign answer fails here,
 * naming the call, rather than later in the caller's code.
 */
export function unexpectedShape(body: SuccessBody, request: ApiRequest, what: string): CoreApiError {
  return new CoreApiError({
    status: body.status,
    method: request.method,
    path: request.path,
    envelope: undefined,
    requestId: body.requestId,
    retryAfterMs: undefined,
    attempts: body.attempts,
    reason: what,
  });
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
