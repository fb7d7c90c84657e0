import { EVENT_COLUMNS, type EventRow } from './event-rows.js';
import type { FeedQuery } from './event-store.js';
import { DEVICE_EVENTS_TABLE, pageScopeColumns, pageTable } from './device-events.js';
import { PAGE_SETTINGS, pageConditions } from './feed-sql.js';
import type { FeedWindow } from './feed-windows.js';
import type { SqlParam, SqlTransport } from './sql-transport.js';
import { clickhouseException } from './store-errors.js';

/** One read of a page within one window: its rows in feed order, at most `query.limit`, copies included. */
export type PageRead = (query: FeedQuery, window: FeedWindow) => Promise<EventRow[]>;

/**
 * Page reads that may wait to go together. `whenAlone` runs `task` in place of a read that
 * would go at once, alone, holding its place among the batches out, and gives undefined
 * where a read would wait: a page's first read then takes a query of its own
 * (src/store/first-read.ts) while the store has room, and waits to go with others when not.
 */
export type BatchedPageRead = PageRead & { readonly whenAlone: <T>(task: () => Promise<T>) => Promise<T> | undefined };

/**
 * How reads are grouped (docs/decisions/feed-batched-page-reads.md).
 * - `inFlight`: batches sent to the store at once; reads that arrive meanwhile wait and
 *   leave together as the next batch.
 * - `maxBatch`: the most reads one batch holds.
 * - `rowsPerRead`: what a batch may read, in rows per read it holds. A batch reads every
 *   row of each read's window where a lone read stops at its limit, so a window holding
 *   far more than a page (events dated ahead of the clock, a window wider than the
 *   project's pace) would cost more together than alone: the store refuses such a batch
 *   before reading it, and its reads are sent alone.
 * - `memoryBytes`: the most memory one batch may take on the server. A batch of device
 *   reads sorts the rows its windows hold (`batchSql`); one over this bound fails for its
 *   size, and its reads are sent alone, as for rows.
 * - `fillTo`, `lingerMs`: while a batch is out, a free slot waits for `fillTo` reads, or
 *   for the oldest waiting read to have waited `lingerMs`, or for no batch to be out,
 *   before it sends what waits (docs/decisions/feed-batch-linger.md). With no batch out,
 *   a read goes at once.
 */
export interface PageBatching {
  readonly inFlight: number;
  readonly maxBatch: number;
  readonly rowsPerRead: number;
  readonly memoryBytes: number;
  readonly fillTo: number;
  readonly lingerMs: number;
}

/**
 * Two batches at a time, one per core of the machine measured (and of the smallest
 * deployment), each one thread (`max_threads = 1`); up to 32 reads each, the load of 32
 * connections; 16 granules of 8,192 rows a read, about eight times what a windowed first
 * page reads; 256 MiB a batch, some twenty times what a batch of 32 device reads took
 * on a store of 100M events (docs/decisions/feed-batched-page-reads.md). While one batch
 * is out, the other slot waits up to 10 ms for 8 reads: a device read alone cost the
 * server about twice what it cost in a batch of 8, and 10 ms is half what a device page
 * takes alone (docs/decisions/feed-batch-linger.md).
 */
export const PAGE_BATCHING: PageBatching = { inFlight: 2, maxBatch: 32, rowsPerRead: 16 * 8192, memoryBytes: 256 * 1024 * 1024, fillTo: 8, lingerMs: 10 };

/** The batching FEED_BATCHES_IN_FLIGHT asks for: none at 0. */
export const pageBatchingOf = (config: { readonly feedBatchesInFlight: number }): PageBatching | false =>
  config.feedBatchesInFlight === 0 ? false : { ...PAGE_BATCHING, inFlight: config.feedBatchesInFlight };

/** The engine's TOO_MANY_ROWS and TOO_MANY_BYTES: the batch selects more than it may read. */
const TOO_MANY_ROWS = 158;
const TOO_MANY_BYTES = 307;
/**
 * MEMORY_LIMIT_EXCEEDED is the batch's own when its text names the query's limit, the
 * server's when it names the total. Older engines name the query's as "Memory limit (for
 * query)"; the one measured here (26.7) as "Query memory limit".
 */
const MEMORY_LIMIT_EXCEEDED = 241;

/**
 * Whether the store failed a batch for being a batch (its size), so its reads alone may
 * well pass. Anything else (the store unreachable or overloaded, a shard down, the query
 * cancelled) would fail the reads alone too, or worse, multiply the queries of a store
 * that is refusing them: the batch's reads fail with its error.
 */
function failedForItsSize(error: unknown): boolean {
  const e = clickhouseException(error);
  if (e === undefined) return false;
  if (e.code === TOO_MANY_ROWS || e.code === TOO_MANY_BYTES) return true;
  return e.code === MEMORY_LIMIT_EXCEEDED && /\(for query\)|Query memory limit/.test(e.message);
}
/** How long the projects of a batch the store refused read alone, and how many such projects are remembered. */
const SOLO_MS = 60_000;
const SOLO_CAPACITY = 10_000;

/** A read as a batch holds it. */
export interface BatchedRead {
  readonly query: FeedQuery;
  readonly window: FeedWindow;
}

interface Waiting extends BatchedRead {
  readonly table: string;
  readonly scope: string;
  /** When the read began to wait, on the reader's clock. */
  readonly since: number;
  readonly resolve: (rows: EventRow[]) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Rows of one scope (a project, or a device of a project on the device table) come back as
 * one run of the batch's answer; the table and the scope's key name them.
 */
const scopeName = (table: string, key: readonly (string | null)[]) => [table, ...key].map((part) => String(part).toLowerCase()).join(' ');
type ScopeColumns = ReturnType<typeof pageScopeColumns>;
/** What a query asks of each scope column: the same columns name a read's scope and its rows'. */
const ASKED: { readonly [C in ScopeColumns[number]]: (query: FeedQuery) => string | null } = {
  org_id: (query) => query.orgId,
  project_id: (query) => query.projectId,
  device_id: (query) => query.filters.deviceId ?? null,
};
const scopeOf = (query: FeedQuery) => scopeName(pageTable(query.filters), pageScopeColumns(query.filters).map((column) => ASKED[column](query)));
const rowScopeOf = (table: string, columns: ScopeColumns, row: EventRow) => scopeName(table, columns.map((column) => row[column]));

/**
 * Page reads that the store answers together. The engine spends about as much planning a
 * query as reading a page's few granules (docs/decisions/feed-batched-page-reads.md), so a page read
 * alone costs it several times a `SELECT 1`; 32 pages of different projects in one query
 * cost it a third of that each. A read that finds no batch out is sent at once, alone, as
 * before; reads that arrive while `inFlight` batches are out wait for the next one, and
 * while fewer are out, for the free slot to gather `fillTo` of them or to linger out.
 *
 * A batch reads one table and holds one read per scope: a project on the events table, a
 * device of a project on the device table (docs/decisions/device-pages.md), whose rows are
 * told apart by their ids. Each read's own conditions are joined by OR, ordered by the
 * whole sort key and cut per scope at the largest limit: each read gets the rows it would
 * have got alone. Reads of the other table wait for a batch of their own. Sent alone, never
 * held back: a read of a scope that already has a read waiting (one hot project's pages
 * would otherwise queue behind `inFlight` slots), a read with no lower window edge (its
 * range is the scope's history), and
 * for a minute the reads of the scopes of a batch the store refused as too large. A
 * batch the store fails for its size (rows, bytes, the query's memory) sends its reads
 * alone, so it fails no page; any other failure is every read's, as it would have been.
 */
export function batchedPageReads(transport: SqlTransport, alone: PageRead, batching: PageBatching = PAGE_BATCHING, now: () => number = Date.now): BatchedPageRead {
  for (const [name, value] of Object.entries(batching)) {
    if (!Number.isInteger(value) || value < 1) throw new Error(`page batching: ${name} must be a whole number, 1 or more; got ${String(value)}`);
  }
  const waiting: Waiting[] = [];
  const waitingScopes = new Set<string>();
  const soloUntil = new Map<string, number>();
  let inFlight = 0;

  const readsAlone = (scope: string) => {
    const until = soloUntil.get(scope);
    if (until === undefined) return false;
    if (until > now()) return true;
    soloUntil.delete(scope);
    return false;
  };
  const sendAlone = (read: Waiting) =>
    Promise.resolve()
      .then(() => alone(read.query, read.window))
      .then(read.resolve, read.reject);

  const send = async (batch: readonly Waiting[]) => {
    if (batch.length === 1) return sendAlone(batch[0]!);
    let rows: EventRow[];
    try {
      const { sql, params } = batchSql(batch, { rows: batching.rowsPerRead * batch.length, memoryBytes: batching.memoryBytes });
      rows = await transport.query<EventRow>(sql, params);
    } catch (error) {
      if (!failedForItsSize(error)) throw error;
      // Which read holds the rows is not known: all of them read alone for a while, so a
      // project that overflows every batch it joins costs one refusal a minute.
      for (const read of batch) {
        soloUntil.delete(read.scope);
        soloUntil.set(read.scope, now() + SOLO_MS);
      }
      while (soloUntil.size > SOLO_CAPACITY) soloUntil.delete(soloUntil.keys().next().value!);
      // All at once, as they would have gone without batches; the slot is held until they end.
      await Promise.all(batch.map(sendAlone));
      return;
    }
    const { table } = batch[0]!;
    const columns = pageScopeColumns(batch[0]!.query.filters);
    const byScope = new Map<string, EventRow[]>();
    for (const row of rows) {
      const scope = rowScopeOf(table, columns, row);
      const found = byScope.get(scope);
      if (found === undefined) byScope.set(scope, [row]);
      else found.push(row);
    }
    for (const read of batch) read.resolve((byScope.get(read.scope) ?? []).slice(0, read.query.limit));
  };

  /** The reads that wait longest and read the table the first of them reads, up to `maxBatch`. */
  const takeBatch = (): Waiting[] => {
    const table = waiting[0]?.table;
    const taken: Waiting[] = [];
    for (let k = 0; k < waiting.length && taken.length < batching.maxBatch; ) {
      if (waiting[k]!.table === table) taken.push(...waiting.splice(k, 1));
      else k += 1;
    }
    return taken;
  };

  /** A dispatch once the oldest waiting read has waited `lingerMs`; one at a time. */
  let lingering: ReturnType<typeof setTimeout> | undefined;
  const lingerFor = (ms: number) => {
    lingering ??= setTimeout(() => {
      lingering = undefined;
      dispatch();
    }, ms);
  };

  const dispatch = () => {
    while (inFlight < batching.inFlight && waiting.length > 0) {
      // A batch out keeps the store busy: a free slot gathers reads rather than spend a
      // query's fixed cost on one or two of them.
      if (inFlight > 0 && waiting.length < batching.fillTo) {
        const waited = now() - waiting[0]!.since;
        if (waited < batching.lingerMs) {
          lingerFor(batching.lingerMs - waited);
          return;
        }
      }
      const taken = takeBatch();
      for (const read of taken) waitingScopes.delete(read.scope);
      // A batch refused while these waited may have sent their projects to read alone.
      const batch: Waiting[] = [];
      for (const read of taken) {
        if (readsAlone(read.scope)) void sendAlone(read);
        else batch.push(read);
      }
      if (batch.length === 0) continue;
      inFlight += 1;
      void send(batch)
        .catch((error: unknown) => {
          for (const read of batch) read.reject(error);
        })
        .finally(() => {
          inFlight -= 1;
          dispatch();
        });
    }
  };

  const read: PageRead = (query, window) => {
    const scope = scopeOf(query);
    if (window.from === undefined || waitingScopes.has(scope) || readsAlone(scope)) return alone(query, window);
    return new Promise<EventRow[]>((resolve, reject) => {
      waiting.push({ query, window, table: pageTable(query.filters), scope, since: now(), resolve, reject });
      waitingScopes.add(scope);
      dispatch();
    });
  };
  const whenAlone = <T>(task: () => Promise<T>): Promise<T> | undefined => {
    // With every slot taken, or reads gathering for a free one, a first read waits with them.
    if (inFlight >= batching.inFlight || waiting.length > 0) return undefined;
    inFlight += 1;
    return Promise.resolve()
      .then(task)
      .finally(() => {
        inFlight -= 1;
        dispatch();
      });
  };
  return Object.assign(read, { whenAlone });
}

/** What one batch may take on the server: rows selected (checked before any is read) and memory. */
export interface BatchBounds {
  readonly rows: number;
  readonly memoryBytes: number;
}

/**
 * The reads' conditions, each under parameter names of its own, joined by OR, on the table
 * they all read. Ordered by the whole sort key, descending, every scope's rows are a run in
 * feed order; LIMIT BY cuts each run at the largest limit, and each read keeps its own.
 * `max_rows_to_read` is checked against the granules the conditions select, before any is
 * read (on one node; on a cluster each shard checks its own, and the initiator the total
 * as rows arrive).
 *
 * A batch of device reads sorts its rows instead of reading the table in its order: its
 * windows are short ranges of many devices in each of the parts a month holds, and read in
 * order the engine spent more CPU on the same rows the more reads the batch held
 * (docs/decisions/feed-batched-page-reads.md). The rows it sorts are those its windows
 * hold, which `max_memory_usage` bounds. On the events table reading in order cost no
 * more, and keeps a batch's memory to a stream.
 */
export function batchSql(batch: readonly BatchedRead[], bounds: BatchBounds): { sql: string; params: Record<string, SqlParam> } {
  const tables = new Set(batch.map(({ query }) => pageTable(query.filters)));
  if (tables.size !== 1) throw new Error(`a batch of page reads reads one table; got ${[...tables].join(', ')}`);
  const [table] = tables;
  const scope = pageScopeColumns(batch[0]!.query.filters);
  const params: Record<string, SqlParam> = {};
  const alternatives = batch.map(({ query, window }, i) => {
    const own = pageConditions(query, window);
    for (const [name, value] of Object.entries(own.params)) params[`r${i}_${name}`] = value;
    return `(${own.where.map((condition) => condition.replace(/\{(\w+):/g, `{r${i}_$1:`)).join(' AND ')})`;
  });
  params['limit'] = Math.max(...batch.map(({ query }) => query.limit));
  const settings = [
    ...PAGE_SETTINGS,
    `max_rows_to_read = ${bounds.rows}`,
    "read_overflow_mode = 'throw'",
    `max_memory_usage = ${bounds.memoryBytes}`,
    ...(table === DEVICE_EVENTS_TABLE ? ['optimize_read_in_order = 0'] : []),
  ];
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}
    FROM ${table!}
    WHERE ${alternatives.join('\n      OR ')}
    ORDER BY ${[...scope, 'occurred_at', 'id'].map((column) => `${column} DESC`).join(', ')}
    LIMIT {limit:UInt32} BY ${scope.join(', ')}
    SETTINGS ${settings.join(', ')}`;
  return { sql, params };
}
