import { AppError } from '../errors/app-error.js';
import { clickhouseException, isClientTimeout, toStoreError } from './store-errors.js';

/**
 * ClickHouse exception codes that are a verdict on the rows of an insert rather than on
 * the store: a value that does not parse into its column's type, or a row that breaks a
 * table constraint. A healthy store refuses the same rows every time, so retrying them
 * cannot help. Every other failure (no connection, a timeout, memory, too many parts, a
 * missing table or database, read-only, access, an engine fault) means the store is sick,
 * and the same rows may well be stored once it recovers.
 *
 * Numbers and names are those of ClickHouse's src/Common/ErrorCodes.cpp
 * (github.com/ClickHouse/ClickHouse), checked with errorCodeToName() on the engine this
 * project runs (26.7). Only codes about the values of the column types of our tables are
 * listed. Codes that say the table no longer matches what we write (THERE_IS_NO_COLUMN 8,
 * NO_SUCH_COLUMN_IN_TABLE 16, INCORRECT_NUMBER_OF_COLUMNS 7) are left out on purpose: they
 * would refuse every row alike, which is a broken migration to fix, not poison to set aside.
 */
const ROW_REFUSAL_CODES: ReadonlyMap<number, string> = new Map([
  [6, 'CANNOT_PARSE_TEXT'],
  [25, 'CANNOT_PARSE_ESCAPE_SEQUENCE'],
  [26, 'CANNOT_PARSE_QUOTED_STRING'],
  [27, 'CANNOT_PARSE_INPUT_ASSERTION_FAILED'],
  [38, 'CANNOT_PARSE_DATE'],
  [41, 'CANNOT_PARSE_DATETIME'],
  [53, 'TYPE_MISMATCH'],
  [72, 'CANNOT_PARSE_NUMBER'],
  [117, 'INCORRECT_DATA'],
  [131, 'TOO_LARGE_STRING_SIZE'],
  [321, 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE'],
  [349, 'CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN'],
  [376, 'CANNOT_PARSE_UUID'],
  [469, 'VIOLATED_CONSTRAINT'],
]);

/** The refusal text is for a DLQ header and a log line, not for a copy of the row. */
const REFUSAL_TEXT_LIMIT = 500;

export interface RowRefusal {
  /** ClickHouse's code; undefined for a failure of this process's own code (see localFailure). */
  readonly code: number | undefined;
  /** ClickHouse's name for the code, e.g. VIOLATED_CONSTRAINT; or the JavaScript error's, e.g. RangeError. */
  readonly name: string;
  /** The engine's own sentence, without the code prefix, the pipeline trace or any statement text. */
  readonly message: string;
}

/** Errors of JavaScript itself: what encoding a row can throw (a RangeError for a call stack or a string too large, a TypeError for a value that has no JSON form). */
const LANGUAGE_ERRORS = [RangeError, TypeError, SyntaxError] as const;

/**
 * A failure raised by this process's own code while it handled the rows, before or
 * without any I/O: an error of the language itself, with no ClickHouse code and no
 * system error code anywhere in its chain (our AppError wrappers aside). Such a failure
 * is about what the rows hold, since the same code ran fine for every other row; a lost
 * connection, a timeout or a refused request always carries a code of its own.
 */
function localFailure(error: unknown): Error | undefined {
  const seen = new Set<unknown>();
  let e: unknown = error;
  while (e instanceof AppError && !seen.has(e)) {
    seen.add(e);
    e = e.cause;
  }
  if (!(e instanceof Error) || isClientTimeout(e)) return undefined;
  if ((e as { code?: unknown }).code !== undefined || e.cause !== undefined) return undefined;
  return LANGUAGE_ERRORS.some((kind) => e instanceof kind) ? e : undefined;
}

/** The engine's sentence alone: chDB prefixes the code and appends the name; both may append where it happened. */
function engineSentence(message: string): string {
  const firstLine = message.replace(/^Code: \d+\. DB::Exception: /, '').split('\n')[0] ?? '';
  const sentence = firstLine
    .replace(/\s*\(in query: .*$/, '')
    .replace(/\s*\(version [^)]*\)\s*$/, '')
    .replace(/\s*\([A-Z][A-Z0-9_]*\)\s*$/, '')
    .replace(/[\s:]+$/, '')
    .trim();
  return sentence.length <= REFUSAL_TEXT_LIMIT ? sentence : `${sentence.slice(0, REFUSAL_TEXT_LIMIT - 1)}…`;
}

/**
 * What a failed insert says about its rows: a refusal when ClickHouse refused the data or
 * when encoding the rows failed in this process (a value too deep or too large to
 * serialize, say); undefined when the store is sick, or the failure is I/O (a lost
 * connection or a client timeout, which carry no ClickHouse code).
 */
export function rowRefusal(error: unknown): RowRefusal | undefined {
  const exception = clickhouseException(error);
  if (exception === undefined) {
    const local = localFailure(error);
    return local === undefined ? undefined : { code: undefined, name: local.name, message: engineSentence(local.message) };
  }
  const name = ROW_REFUSAL_CODES.get(exception.code);
  if (name === undefined) return undefined;
  return { code: exception.code, name, message: engineSentence(exception.message) };
}

/** One line for the DLQ detail header and the logs, e.g. `VIOLATED_CONSTRAINT (469): Constraint … is violated …` or `RangeError while encoding the row: Maximum call stack size exceeded`. */
export function describeRefusal(refusal: RowRefusal): string {
  return refusal.code === undefined ? `${refusal.name} while encoding the row: ${refusal.message}` : `${refusal.name} (${refusal.code}): ${refusal.message}`;
}

/**
 * Whether the store's own answer says it cannot take writes now: it was not reached, or the
 * engine named its own state (overloaded, too many parts, out of
 * memory, read-only, shutting down: store-errors.ts's UPSTREAM_UNAVAILABLE). That is waited
 * out, never read as a verdict on the rows. Nothing a row holds can bring it about: inserts
 * are bounded by bytes and by the partitions they span (src/store/event-batches.ts).
 */
export function storeCannotWrite(error: unknown): boolean {
  // A client timeout says only that this insert took long: a store that takes the known-good
  // write is asked to take the rows in smaller inserts rather than this one again for ever.
  if (timedOut(error)) return false;
  return toStoreError(error, 'insert').code === 'UPSTREAM_UNAVAILABLE';
}

function timedOut(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = error; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    if (isClientTimeout(e)) return true;
  }
  return false;
}

// ClickHouse ends an exception's text with the code's name: `… (SYNTAX_ERROR) (version 26.7.2.1)`.
const CODE_NAME = /\(([A-Z][A-Z0-9_]*)\)(?:\s*\(version [^)]*\))?\s*$/m;

/** The innermost failure under our AppError wrappers: the engine's, the driver's or the language's own. */
function innermost(error: unknown): unknown {
  const seen = new Set<unknown>();
  let e = error;
  while (e instanceof AppError && e.cause !== undefined && !seen.has(e)) {
    seen.add(e);
    e = e.cause;
  }
  return e;
}

/**
 * The refusal of an insert that failed in a way no list names, once the store has taken a
 * known-good write since: the store answers, so what it said is about these rows. Its code
 * and name when the engine spoke; otherwise the error our own code raised on the rows
 * (building a body too large for a Buffer, say), with its system code if it has one.
 */
export function answeredRefusal(error: unknown): RowRefusal {
  const exception = clickhouseException(error);
  if (exception !== undefined) {
    const name = ROW_REFUSAL_CODES.get(exception.code) ?? CODE_NAME.exec(exception.message)?.[1] ?? `ClickHouse error ${exception.code}`;
    return { code: exception.code, name, message: engineSentence(exception.message) };
  }
  const cause = innermost(error);
  if (!(cause instanceof Error)) return { code: undefined, name: 'Error', message: engineSentence(String(cause)) };
  const systemCode = (cause as { code?: unknown }).code;
  const name = typeof systemCode === 'string' ? `${cause.name} [${systemCode}]` : cause.name;
  return { code: undefined, name, message: engineSentence(cause.message) };
}
