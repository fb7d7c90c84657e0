import type { ErrorEnvelope } from '../src/generated/schema-types.js';

export interface CoreApiErrorInit {
  readonly status: number;
  readonly method: string;
  /** Path under /core/api/v1, with its query string. */
  readonly path: string;
  /** The error envelope, when the body was one; a proxy's HTML page is not. */
  readonly envelope: ErrorEnvelope | undefined;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly attempts: number;
  /** Why a 2xx is reported as an error: its body was not what the operation answers. */
  readonly reason?: string;
}

/**
 * A non-2xx answer of the gateway (or, rarely, a 2xx whose body is not what the operation
 * answers). The envelope carries no machine-readable code (the
 * spec leaves codes out), so callers branch on `status`, and on `fields` for a 400 (or a
 * 401 naming a repeated credential header).
 */
export class CoreApiError extends Error {
  override readonly name = 'CoreApiError';
  readonly status: number;
  readonly method: string;
  readonly path: string;
  readonly envelope: ErrorEnvelope | undefined;
  /** The envelope's `message` when it is a sentence; for a validation failure, a summary of `fields`. */
  readonly errorMessage: string | undefined;
  /** Field → what is wrong with it, when the envelope's `message` is the object form (a 400 listing bad fields, a 401 naming a repeated header). */
  readonly fields: Readonly<Record<string, string>> | undefined;
  readonly detail: string | undefined;
  /** The answer's X-Request-Id, or the one this call sent when the answer has none: what to quote to the gateway's operators. */
  readonly requestId: string | undefined;
  /** What the answer's Retry-After asked for, when it had one; set when the client gave up rather than wait that long. */
  readonly retryAfterMs: number | undefined;
  /** Tries the client made before giving up with this answer. */
  readonly attempts: number;

  constructor(init: CoreApiErrorInit) {
    const message = init.envelope?.message;
    const fields = typeof message === 'object' ? { ...message } : undefined;
    const errorMessage = typeof message === 'string' ? message : fields === undefined ? undefined : `invalid ${Object.keys(fields).join(', ')}`;
    const what = [errorMessage, init.envelope?.detail, init.reason].filter((part) => part !== undefined && part !== '').join(': ');
    super(`${init.method} ${init.path} answered ${init.status}${what === '' ? '' : ` (${what})`}`);
    this.status = init.status;
    this.method = init.method;
    this.path = init.path;
    this.envelope = init.envelope;
    this.errorMessage = errorMessage;
    this.fields = fields;
    this.detail = init.envelope?.detail;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
    this.attempts = init.attempts;
  }
}

/** Reads a body as the error envelope only when it has the envelope's shape, so a foreign body never passes for one. */
export function asErrorEnvelope(body: unknown): ErrorEnvelope | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { ok, message, detail } = body as Record<string, unknown>;
  if (ok !== 0 || typeof detail !== 'string') return undefined;
  if (typeof message === 'string') return { ok: 0, message, detail };
  if (typeof message === 'object' && message !== null && Object.values(message).every((v) => typeof v === 'string')) {
    return { ok: 0, message: message as Record<string, string>, detail };
  }
  return undefined;
}
