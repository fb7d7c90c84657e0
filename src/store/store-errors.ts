import { AppError } from '../errors/app-error.js';

/**
 * The one place where engine and driver errors are read. Anything that means "the store
 * cannot be reached right now" becomes UPSTREAM_UNAVAILABLE (503, retriable); everything
 * else is INTERNAL. The vendor text stays in `cause` for logs, never in the response.
 */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

// ClickHouse codes that mean overload or shutdown, not a wrong query. 243
// (NOT_ENOUGH_SPACE) is a full disk, which a write that carries no row does not meet, so
// the ingest consumer's known-good write cannot tell it; 279 (ALL_CONNECTION_TRIES_FAILED)
// is a Distributed read whose shard is down; 999 (KEEPER_EXCEPTION) a Keeper or ZooKeeper
// that cannot be reached (its "node exists" answer is read by isKeeperKeyTaken before this
// mapping).
const UNAVAILABLE_CLICKHOUSE_CODES = new Set([159, 202, 209, 210, 241, 242, 243, 252, 279, 394, 999]);

const KEEPER_EXCEPTION = 999;
// BAD_ARGUMENTS with this text: the server has no keeper_map_path_prefix; NO_ZOOKEEPER: no Keeper at all.
const KEEPER_MAP_DISABLED = /KeeperMap is disabled/;
const NO_ZOOKEEPER = 225;

/** A KeeperMap insert under keeper_map_strict_mode refused because the key exists: the compare-and-set lost. */
export function isKeeperKeyTaken(error: unknown): boolean {
  const e = clickhouseException(error);
  return e !== undefined && e.code === KEEPER_EXCEPTION && /Node exists/.test(e.message);
}

/** A Keeper operation refused or failed; under strict mode, also a version that changed under a delete. */
export function isKeeperFailure(error: unknown): boolean {
  return clickhouseException(error)?.code === KEEPER_EXCEPTION;
}

/** The server cannot hold KeeperMap tables: no Keeper, or no keeper_map_path_prefix in its config. */
export function isKeeperMapUnavailable(error: unknown): boolean {
  const e = clickhouseException(error);
  return e !== undefined && (e.code === NO_ZOOKEEPER || KEEPER_MAP_DISABLED.test(e.message));
}

// @clickhouse/client reports its request_timeout with a bare Error and this text, nothing else.
const CLIENT_TIMEOUT_MESSAGE = 'Timeout error.';

interface DriverError {
  code?: unknown;
  clickhouseCode?: unknown;
  message?: unknown;
  cause?: unknown;
}

// chDB's text for an engine exception; its insert errors also carry the number as clickhouseCode.
const ENGINE_MESSAGE_CODE = /^Code: (\d+)\. DB::Exception:/;

/**
 * The ClickHouse code on this error itself: @clickhouse/client gives it as a digit string
 * in `code`, chDB as `clickhouseCode` or only at the head of its message.
 */
function ownClickhouseCode(e: DriverError): number | undefined {
  if (typeof e.clickhouseCode === 'number') return e.clickhouseCode;
  if (typeof e.code === 'string' && /^\d+$/.test(e.code)) return Number(e.code);
  const fromText = typeof e.message === 'string' ? ENGINE_MESSAGE_CODE.exec(e.message) : null;
  return fromText === null ? undefined : Number(fromText[1]);
}

/** The engine exception inside a failure, however deep our wrapping and the driver's put it: its code and the engine's text. */
export function clickhouseException(error: unknown): { code: number; message: string } | undefined {
  const seen = new Set<unknown>();
  for (let e = error; typeof e === 'object' && e !== null && !seen.has(e); e = (e as DriverError).cause) {
    seen.add(e);
    const code = ownClickhouseCode(e);
    if (code !== undefined) {
      const { message } = e as DriverError;
      return { code, message: typeof message === 'string' ? message : '' };
    }
  }
  return undefined;
}

/** Whether the error is @clickhouse/client's request timeout, which says nothing but its text. */
export function isClientTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === CLIENT_TIMEOUT_MESSAGE;
}

function codeOf(error: unknown): { errno?: string; clickhouse?: number } {
  if (typeof error !== 'object' || error === null) return {};
  if (isClientTimeout(error)) return { errno: 'ETIMEDOUT' };
  const e = error as DriverError;
  const errno = typeof e.code === 'string' && UNREACHABLE.has(e.code) ? e.code : undefined;
  const clickhouse = ownClickhouseCode(e);
  if (errno === undefined && clickhouse === undefined && e.cause !== undefined && e.cause !== error) return codeOf(e.cause);
  return { ...(errno ? { errno } : {}), ...(clickhouse !== undefined ? { clickhouse } : {}) };
}

/**
 * The store answered, but not consistently yet: a write the read right after it does not
 * see (a replica behind), a race lost more times than the caller tries. Nothing is wrong
 * with the request, and a retry shortly after may succeed: 503, never a 500.
 */
export function storeNotSettled(store: string, operation: string, what: string): AppError {
  return new AppError('UPSTREAM_UNAVAILABLE', `${store} not settled during ${operation}: ${what}`, {
    detail: `The ${store} is temporarily unavailable; retry shortly.`,
  });
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
