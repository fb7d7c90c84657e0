import { EVENT_COLUMNS, type EventRow } from './event-rows.js';
import type { FeedQuery } from './event-store.js';
import { pageConditions, pageSettings } from './feed-sql.js';
import type { FeedWindow } from './feed-windows.js';
import type { SqlParam, SqlTransport } from './sql-transport.js';
import { clickhouseException } from './store-errors.js';

/** One read of a page within one window: its rows in feed order, at most `query.limit`, copies included. */
export type PageRead = (query: FeedQuery, window: FeedWindow) => Promise<EventRow[]>;

/**
 * How reads are grouped (docs/decisions/feed-storage.md, "Pages read together").
 * - `inFlight`: batches sent to the store at once; reads that arrive meanwhile wait and
 *   leave together as the next batch.
 * - `maxBatch`: the most reads one batch holds.
 * - `rowsPerRead`: what a batch may read, in rows per read it holds. A batch reads every
 *   row of each read's window where a lone read stops at its limit, so a window holding
 *   far more than a page (events dated ahead of the clock, a window wider than the
 *   project's pace) would cost more together than alone: the store refuses such a batch
 *   before reading it, and its reads are sent alone.
 */
export interface PageBatching {
  readonly inFlight: number;
  readonly maxBatch: number;
  readonly rowsPerRead: number;
}

/**
 * Two batches at a time, one per core of the machine measured (and of the smallest
 * deployment), each one thread (`max_threads = 1`); up to 32 reads each, the load of 32
 * connections; 16 granules of 8,192 rows a read, about eight times what a windowed first
 * page reads.
 */
export const PAGE_BATCHING: PageBatching = { inFlight: 2, maxBatch: 32, rowsPerRead: 16 * 8192 };

/** The batching FEED_BATCHES_IN_FLIGHT asks for: none at 0. */
export const pageBatchingOf = (config: { readonly feedBatchesInFlight: number }): PageBatching | false =>
  config.feedBatchesInFlight === 0 ? false : { ...PAGE_BATCHING, inFlight: config.feedBatchesInFlight };

/** The engine's TOO_MANY_ROWS: the batch's conditions select more rows than it may read. */
const TOO_MANY_ROWS = 158;

interface Waiting {
  readonly query: FeedQuery;
  readonly window: FeedWindow;
  readonly scope: string;
  readonly resolve: (rows: EventRow[]) => void;
  readonly reject: (error: unknown) => void;
}

/** Rows of one project come back as one run of the batch's answer; their scope names them. */
const scopeOf = (orgId: string, projectId: string) => `${orgId.toLowerCase()} ${projectId.toLowerCase()}`;

/**
 * Page reads that the store answers together. The engine spends about as much planning a
 * query as reading a page's few granules (docs/decisions/feed-storage.md), so a page read
 * alone costs it several times a `SELECT 1`; 32 pages of different projects in one query
 * cost it a third of that each. A read that finds fewer than `inFlight` batches out is sent
 * at once, alone, as before; reads that arrive while `inFlight` batches are out wait for
 * the next one.
 *
 * A batch holds one read per project (a project's rows are told apart by its ids), each
 * read's own conditions joined by OR, ordered by the whole sort key and cut per project at
 * the largest limit: each read gets exactly the rows it would have got alone. Reads of the
 * device_id filter (the projection's settings), reads with no lower window edge (their
 * range is the project's history) and a batch the store refuses as too large are sent alone.
 */
export function batchedPageReads(transport: SqlTransport, alone: PageRead, batching: PageBatching = PAGE_BATCHING): PageRead {
  const waiting: Waiting[] = [];
  let inFlight = 0;

  const send = async (batch: readonly Waiting[]) => {
    if (batch.length === 1) return batch[0]!.resolve(await alone(batch[0]!.query, batch[0]!.window));
    let rows: EventRow[];
    try {
      const { sql, params } = batchSql(batch, batching.rowsPerRead * batch.length);
      rows = await transport.query<EventRow>(sql, params);
    } catch (error) {
      if (clickhouseException(error)?.code !== TOO_MANY_ROWS) throw error;
      // All at once, as they would have gone without batches; the slot is held until they end.
      await Promise.all(batch.map((read) => alone(read.query, read.window).then(read.resolve, read.reject)));
      return;
    }
    const byScope = new Map<string, EventRow[]>();
    for (const row of rows) {
      const scope = scopeOf(row.org_id, row.project_id);
      const found = byScope.get(scope);
      if (found === undefined) byScope.set(scope, [row]);
      else found.push(row);
    }
    for (const read of batch) read.resolve((byScope.get(read.scope) ?? []).slice(0, read.query.limit));
  };

  const dispatch = () => {
    while (inFlight < batching.inFlight && waiting.length > 0) {
      const batch = takeBatch(waiting, batching.maxBatch);
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

  return (query, window) => {
    if (query.filters.deviceId !== undefined || window.from === undefined) return alone(query, window);
    return new Promise<EventRow[]>((resolve, reject) => {
      waiting.push({ query, window, scope: scopeOf(query.orgId, query.projectId), resolve, reject });
      dispatch();
    });
  };
}

/** The oldest waiting reads, one per project, up to `max`; a second read of a project waits for the next batch. */
function takeBatch(waiting: Waiting[], max: number): Waiting[] {
  const batch: Waiting[] = [];
  const scopes = new Set<string>();
  for (let i = 0; i < waiting.length && batch.length < max; ) {
    const read = waiting[i]!;
    if (scopes.has(read.scope)) {
      i += 1;
      continue;
    }
    scopes.add(read.scope);
    batch.push(read);
    waiting.splice(i, 1);
  }
  return batch;
}

/**
 * The reads' conditions, each under parameter names of its own, joined by OR. Ordered by
 * the whole sort key, descending, every project's rows are a run in feed order; LIMIT BY
 * cuts each run at the largest limit, and each read keeps its own. `max_rows_to_read` is
 * checked against the granules the conditions select, before any is read.
 */
export function batchSql(batch: readonly Pick<Waiting, 'query' | 'window'>[], maxRows: number): { sql: string; params: Record<string, SqlParam> } {
  const params: Record<string, SqlParam> = {};
  const alternatives = batch.map(({ query, window }, i) => {
    const own = pageConditions(query, window);
    for (const [name, value] of Object.entries(own.params)) params[`r${i}_${name}`] = value;
    return `(${own.where.map((condition) => condition.replace(/\{(\w+):/g, `{r${i}_$1:`)).join(' AND ')})`;
  });
  params['limit'] = Math.max(...batch.map(({ query }) => query.limit));
  const sql = `SELECT ${EVENT_COLUMNS.join(', ')}
    FROM events
    WHERE ${alternatives.join('\n      OR ')}
    ORDER BY org_id DESC, project_id DESC, occurred_at DESC, id DESC
    LIMIT {limit:UInt32} BY org_id, project_id
    SETTINGS ${[...pageSettings(batch[0]!.query.filters), `max_rows_to_read = ${maxRows}`, "read_overflow_mode = 'throw'"].join(', ')}`;
  return { sql, params };
}
