/**
 * Every failure the gateway reports is an AppError with a stable code. The code fixes
 * the HTTP status and whether a caller may retry; src/http/error-response.ts is the one
 * place that turns an error into a response.
 */
export const errorCodes = {
  VALIDATION_FAILED: { status: 400, retriable: false },
  MALFORMED_JSON: { status: 400, retriable: false },
  INVALID_CURSOR: { status: 400, retriable: false },
  UNAUTHENTICATED: { status: 401, retriable: false },
  FORBIDDEN: { status: 403, retriable: false },
  NOT_FOUND: { status: 404, retriable: false },
  METHOD_NOT_ALLOWED: { status: 405, retriable: false },
  BODY_TOO_LARGE: { status: 413, retriable: false },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retriable: false },
  IDEMPOTENCY_KEY_REUSED: { status: 422, retriable: false },
  // The organization's live tails on this process are all taken; one frees when a stream closes.
  TOO_MANY_STREAMS: { status: 429, retriable: true },
  // The organization used up its request rate on this process (RATE_LIMIT_PER_ORG); Retry-After says when a request fits again.
  RATE_LIMITED: { status: 429, retriable: true },
  UPSTREAM_UNAVAILABLE: { status: 503, retriable: true },
  INTERNAL: { status: 500, retriable: false },
} as const satisfies Record<string, { status: number; retriable: boolean }>;

export type ErrorCode = keyof typeof errorCodes;

/** Field name → what is wrong with it; shown to clients as the envelope's `message`. */
export type FieldErrors = Record<string, string>;

export interface AppErrorOptions {
  /** Shown to the client as `detail`; must never carry internals. */
  detail?: string;
  fields?: FieldErrors;
  cause?: unknown;
  /** Whole seconds until a retry can succeed, sent as Retry-After. */
  retryAfterSeconds?: number;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retriable: boolean;
  readonly detail: string;
  readonly fields: FieldErrors | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = errorCodes[code].status;
    this.retriable = errorCodes[code].retriable;
    this.detail = options.detail ?? message;
    this.fields = options.fields;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
