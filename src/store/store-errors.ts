import { AppError } from '../errors.js';

/**
 * The one place where engine and driver errors are read. Anything that means "the store
 * cannot be reached right now" becomes UPSTREAM_UNAVAILABLE (503, retriable); everything
 * else is INTERNAL. The vendor text stays in `cause` for logs, never in the response.
 */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

// ClickHouse codes that mean overload or shutdown, not a wrong query.
const UNAVAILABLE_CLICKHOUSE_CODES = new Set([159, 202, 209, 210, 241, 242, 252, 394]);

// @clickhouse/client reports its request_timeout with a bare Error and this text, nothing else.
const CLIENT_TIMEOUT_MESSAGE = 'Timeout error.';

function codeOf(error: unknown): { errno?: string; clickhouse?: number } {
  if (typeof error !== 'object' || error === null) return {};
  if (error instanceof Error && error.message === CLIENT_TIMEOUT_MESSAGE) return { errno: 'ETIMEDOUT' };
  const e = error as { code?: unknown; clickhouseCode?: unknown; cause?: unknown };
  const errno = typeof e.code === 'string' && UNREACHABLE.has(e.code) ? e.code : undefined;
  let clickhouse: number | undefined;
  if (typeof e.clickhouseCode === 'number') clickhouse = e.clickhouseCode;
  else if (typeof e.code === 'string' && /^\d+$/.test(e.code)) clickhouse = Number(e.code);
  if (errno === undefined && clickhouse === undefined && e.cause !== undefined && e.cause !== error) return codeOf(e.cause);
  return { ...(errno ? { errno } : {}), ...(clickhouse !== undefined ? { clickhouse } : {}) };
}

export function toStoreError(error: unknown, operation: string): AppError {
  if (error instanceof AppError) return error;
  const { errno, clickhouse } = codeOf(error);
  if (errno !== undefined || (clickhouse !== undefined && UNAVAILABLE_CLICKHOUSE_CODES.has(clickhouse))) {
    return new AppError('UPSTREAM_UNAVAILABLE', `event store unavailable during ${operation}`, {
      detail: 'The event store is temporarily unavailable; retry shortly.',
      cause: error,
    });
  }
  return new AppError('INTERNAL', `event store failed during ${operation}`, {
    detail: 'Internal error.',
    cause: error,
  });
}
