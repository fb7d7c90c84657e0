import { expect } from 'chai';
import { batchedPageReads, batchSql, PAGE_BATCHING, type PageRead } from '../../../src/store/batched-page-reads.js';
import type { EventRow } from '../../../src/store/event-rows.js';
import type { FeedQuery } from '../../../src/store/event-store.js';
import type { SqlParams, SqlTransport } from '../../../src/store/sql-transport.js';
import { uuid } from '../../support/factories.js';

const WINDOW = { from: '2026-01-01 00:00:00.000000' };

function pageQuery(overrides: Partial<FeedQuery> = {}): FeedQuery {
  return { orgId: uuid(), projectId: uuid(), filters: {}, after: undefined, limit: 3, ...overrides };
}

function row(query: FeedQuery, n: number): EventRow {
  return {
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    org_id: query.orgId.toLowerCase(),
    project_id: query.projectId.toLowerCase(),
    domain: 'telemetry',
    entity: 'reading',
    action: 'recorded',
    occurred_at: `2026-01-01 00:00:${String(59 - n).padStart(2, '0')}.000000`,
    correlation_id: null,
    device_id: null,
    fleet_id: null,
    payload: null,
    source_service: null,
    span_id: null,
    trace_id: null,
  };
}

/** A store whose answers the test gives, one statement at a time, in the order they were sent. */
function heldStore() {
  const statements: { sql: string; params: SqlParams; answer: (rows: EventRow[]) => void; fail: (error: unknown) => void }[] = [];
  const transport: Pick<SqlTransport, 'query'> = {
    query: <Row>(sql: string, params?: SqlParams) =>
      new Promise<Row[]>((resolve, reject) => {
        statements.push({ sql, params: params ?? {}, answer: (rows) => resolve(rows as Row[]), fail: reject });
      }),
  };
  const alone: { query: FeedQuery }[] = [];
  const readAlone: PageRead = async (query) => {
    alone.push({ query });
    return [row(query, 0)];
  };
  return { transport: transport as SqlTransport, statements, alone, readAlone };
}

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('feed page reads sent together', () => {
  it('sends a read that finds nothing in flight at once, alone', async () => {
    const store = heldStore();
    const read = batchedPageReads(store.transport, store.readAlone, { ...PAGE_BATCHING, inFlight: 1 });
    const query = pageQuery();
    expect(await read(query, WINDOW)).to.deep.equal([row(query, 0)]);
    expect(store.alone).to.have.length(1);
    expect(store.statements).to.deep.equal([]);
  });

  it('sends the reads that came while a batch was out as one batch, one read per project, each cut at its own limit', async () => {
    const store = heldStore();
    const sentAlone: FeedQuery[] = [];
    let releaseFirst: () => void = () => undefined;
    const readAlone: PageRead = (query) => {
      sentAlone.push(query);
      return new Promise((resolve) => (releaseFirst = () => resolve([])));
    };
    const read = batchedPageReads(store.transport, readAlone, { ...PAGE_BATCHING, inFlight: 1 });
    const first = read(pageQuery(), WINDOW);
    const a = pageQuery({ limit: 2 });
    const b = pageQuery({ limit: 5 });
    // The same project as a, in upper case: it waits for the batch after.
    const a2 = { ...a, orgId: a.orgId.toUpperCase(), projectId: a.projectId.toUpperCase(), filters: { domain: 'edge' } };
    const reads = [read(a, WINDOW), read(b, WINDOW), read(a2, WINDOW)];
    await settle();
    expect(store.statements, 'nothing sent while the first read is out').to.deep.equal([]);
    releaseFirst();
    await first;
    await settle();
    expect(store.statements).to.have.length(1);
    const batch = store.statements[0]!;
    expect(batch.params).to.include({ r0_project_id: a.projectId, r1_project_id: b.projectId, limit: 5 });
    expect(batch.sql).to.include('LIMIT {limit:UInt32} BY org_id, project_id');
    // Rows come back grouped by project, up to the largest limit each.
    batch.answer([row(b, 0), row(b, 1), row(b, 2), row(a, 0), row(a, 1), row(a, 2)]);
    await settle();
    expect(store.statements, 'the second read of a project, alone in the next batch').to.have.length(1);
    expect(sentAlone.map((q) => q.filters)).to.deep.equal([{}, { domain: 'edge' }]);
    releaseFirst();
    const [gotA, gotB, gotA2] = await Promise.all(reads);
    expect(gotA).to.deep.equal([row(a, 0), row(a, 1)]);
    expect(gotB).to.deep.equal([row(b, 0), row(b, 1), row(b, 2)]);
    expect(gotA2).to.deep.equal([]);
  });

  it('never holds back a device_id read or a read with no lower window edge', async () => {
    const store = heldStore();
    const read = batchedPageReads(store.transport, store.readAlone, { ...PAGE_BATCHING, inFlight: 1 });
    const held = read(pageQuery(), WINDOW);
    void read(pageQuery(), WINDOW);
    await read(pageQuery({ filters: { deviceId: uuid() } }), WINDOW);
    await read(pageQuery(), { to: WINDOW.from });
    expect(store.alone).to.have.length(3);
    await held;
  });

  it('reads each page of a batch alone when the store refuses the batch as too many rows, and fails them all on any other error', async () => {
    for (const [code, expectAlone] of [
      ['158', true],
      ['241', false],
    ] as const) {
      const store = heldStore();
      const firstQuery = pageQuery();
      let release: () => void = () => undefined;
      // The first read holds the one batch slot while the next two arrive.
      const readAlone: PageRead = (query, window) =>
        query === firstQuery ? new Promise((resolve) => (release = () => resolve([]))) : store.readAlone(query, window);
      const read = batchedPageReads(store.transport, readAlone, { ...PAGE_BATCHING, inFlight: 1 });
      const first = read(firstQuery, WINDOW);
      const reads = [pageQuery(), pageQuery()].map((q) => read(q, WINDOW).then((rows) => ({ rows }), (error: unknown) => ({ error })));
      await settle();
      release();
      await first;
      await settle();
      const refusal = Object.assign(new Error(`Code: ${code}. DB::Exception`), { code });
      store.statements[0]!.fail(refusal);
      const outcomes = await Promise.all(reads);
      if (expectAlone) expect(outcomes.map((o) => ('rows' in o ? o.rows.length : -1))).to.deep.equal([1, 1]);
      else expect(outcomes.map((o) => ('error' in o ? o.error : undefined))).to.deep.equal([refusal, refusal]);
    }
  });

  it('names each read’s parameters apart and bounds the rows a batch may read by its reads', () => {
    const a = pageQuery({ filters: { domain: 'edge', since: '2026-01-01 00:00:00.000000' }, after: { occurredAt: '2026-01-02 00:00:00.000000', id: uuid() } });
    const b = pageQuery({ limit: 9 });
    const { sql, params } = batchSql([{ query: a, window: WINDOW }, { query: b, window: { from: WINDOW.from, to: '2026-01-03 00:00:00.000000' } }], 1000);
    expect(params).to.deep.include({ r0_domain: 'edge', r0_after_id: a.after!.id, r1_window_to: '2026-01-03 00:00:00.000000', limit: 9 });
    for (const name of Object.keys(params)) expect(sql, name).to.include(`{${name}:`);
    expect(sql).to.not.match(/\{(org_id|project_id|domain|after_t|window_from):/);
    expect(sql).to.include('max_rows_to_read = 1000');
  });
});
