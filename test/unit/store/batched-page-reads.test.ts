import { expect } from 'chai';
import { batchedPageReads, batchSql, PAGE_BATCHING, type PageBatching, type PageRead } from '../../../src/store/batched-page-reads.js';
import type { EventRow } from '../../../src/store/event-rows.js';
import type { FeedQuery } from '../../../src/store/event-store.js';
import { uuid } from '../../support/factories.js';
import { heldTransport } from '../../support/held-transport.js';
import { waitFor } from '../../support/wait-for.js';

const WINDOW = { from: '2026-01-01 00:00:00.000000' };
const BOUNDS = { rows: 1000, memoryBytes: 2_000_000 };

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
    device_id: query.filters.deviceId?.toLowerCase() ?? null,
    fleet_id: null,
    payload: null,
    source_service: null,
    span_id: null,
    trace_id: null,
  };
}

/** A store whose answers the test gives, one statement at a time, in the order they were sent. */
function heldStore() {
  const { transport, statements } = heldTransport();
  const alone: { query: FeedQuery }[] = [];
  const readAlone: PageRead = async (query) => {
    alone.push({ query });
    return [row(query, 0)];
  };
  return { transport, statements, alone, readAlone };
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

  /** A reader batching as `batching` says, whose lone reads are held until released, in the order sent. */
  function heldSlots(batching: Partial<PageBatching>, now: () => number = Date.now) {
    const store = heldStore();
    const sentAlone: { query: FeedQuery; release: (rows?: EventRow[]) => void }[] = [];
    const readAlone: PageRead = (query) => new Promise((resolve) => sentAlone.push({ query, release: (rows = []) => resolve(rows) }));
    const read = batchedPageReads(store.transport, readAlone, { ...PAGE_BATCHING, ...batching }, now);
    return { ...store, sentAlone, read };
  }
  /** One batch slot: a read that comes while it is taken waits for it. */
  const oneSlot = (now: () => number = Date.now) => heldSlots({ inFlight: 1 }, now);

  it('runs a first read in place of a read alone while a slot is free, holding the slot, and refuses it while none is', async () => {
    const { read, statements, sentAlone } = oneSlot();
    let release: () => void = () => undefined;
    const task = read.whenAlone(() => new Promise<string>((resolve) => (release = () => resolve('read'))));
    expect(task, 'a free slot').to.not.equal(undefined);
    // The slot is the task's: a read that comes meanwhile waits, and so would another first read.
    expect(read.whenAlone(() => Promise.resolve('second'))).to.equal(undefined);
    const waiting = read(pageQuery(), WINDOW);
    await settle();
    expect(sentAlone).to.have.length(0);
    release();
    expect(await task).to.equal('read');
    await settle();
    // Its slot freed, the read that waited goes.
    expect(sentAlone).to.have.length(1);
    sentAlone[0]!.release();
    await waiting;
    await settle();
    expect(statements).to.deep.equal([]);
    expect(read.whenAlone(() => Promise.resolve('free again'))).to.not.equal(undefined);
  });

  it('sends the reads that came while a batch was out as one batch, each cut at its own limit, and a second read of a waiting project alone at once', async () => {
    const { read, statements, sentAlone } = oneSlot();
    const firstQuery = pageQuery();
    const first = read(firstQuery, WINDOW);
    const a = pageQuery({ limit: 2 });
    const b = pageQuery({ limit: 5 });
    // The same project as a, in upper case, while a waits: not held back behind it.
    const a2 = { ...a, orgId: a.orgId.toUpperCase(), projectId: a.projectId.toUpperCase(), filters: { domain: 'edge' } };
    const reads = [read(a, WINDOW), read(b, WINDOW), read(a2, WINDOW)];
    await settle();
    expect(statements, 'nothing batched while the first read is out').to.deep.equal([]);
    expect(sentAlone.map((s) => s.query)).to.have.members([firstQuery, a2]);
    for (const s of sentAlone) s.release(s.query === a2 ? [row(a, 9)] : []);
    await first;
    await settle();
    expect(statements).to.have.length(1);
    const batch = statements[0]!;
    expect(batch.params).to.include({ r0_project_id: a.projectId, r1_project_id: b.projectId, limit: 5 });
    expect(batch.sql).to.include('LIMIT {limit:UInt32} BY org_id, project_id');
    // Rows come back grouped by project, up to the largest limit each.
    batch.answer([row(b, 0), row(b, 1), row(b, 2), row(a, 0), row(a, 1), row(a, 2)]);
    const [gotA, gotB, gotA2] = await Promise.all(reads);
    expect(gotA).to.deep.equal([row(a, 0), row(a, 1)]);
    expect(gotB).to.deep.equal([row(b, 0), row(b, 1), row(b, 2)]);
    expect(gotA2).to.deep.equal([row(a, 9)]);
  });

  /** Two batch slots: while one is taken, reads gather for the other. */
  const twoSlots = (gathering: Pick<PageBatching, 'fillTo' | 'lingerMs'>) => heldSlots({ inFlight: 2, ...gathering });
  /** The projects a batch statement reads, in its order. */
  const projectsOf = (params: Record<string, unknown>) => Object.keys(params).filter((name) => /^r\d+_project_id$/.test(name)).map((name) => params[name]);

  it('while a batch is out, gathers reads for the free slot and sends them together once fillTo of them wait', async () => {
    const { read, statements, sentAlone } = twoSlots({ fillTo: 3, lingerMs: 60_000 });
    const out = pageQuery();
    void read(out, WINDOW);
    const [b, c, d] = [pageQuery(), pageQuery(), pageQuery()];
    void read(b, WINDOW);
    void read(c, WINDOW);
    await settle();
    expect(sentAlone.map((s) => s.query), 'the first read went at once; two reads gather').to.deep.equal([out]);
    expect(statements).to.deep.equal([]);
    void read(d, WINDOW);
    await settle();
    expect(statements, 'the third fills the batch, the first read still out').to.have.length(1);
    expect(projectsOf(statements[0]!.params)).to.deep.equal([b.projectId, c.projectId, d.projectId]);
  });

  it('sends the reads that gathered as soon as no batch is out', async () => {
    const { read, statements, sentAlone } = twoSlots({ fillTo: 8, lingerMs: 60_000 });
    const first = read(pageQuery(), WINDOW);
    const [b, c] = [pageQuery(), pageQuery()];
    const gathered = [read(b, WINDOW), read(c, WINDOW)];
    await settle();
    expect(statements).to.deep.equal([]);
    sentAlone[0]!.release();
    await first;
    await settle();
    expect(statements).to.have.length(1);
    expect(projectsOf(statements[0]!.params)).to.deep.equal([b.projectId, c.projectId]);
    statements[0]!.answer([row(b, 0), row(c, 0)]);
    expect(await Promise.all(gathered)).to.deep.equal([[row(b, 0)], [row(c, 0)]]);
  });

  it('sends a gathering read once it has waited lingerMs, though the other batch is still out', async () => {
    const { read, sentAlone } = twoSlots({ fillTo: 8, lingerMs: 5 });
    const [first, lingered] = [pageQuery(), pageQuery()];
    void read(first, WINDOW);
    const answer = read(lingered, WINDOW);
    await settle();
    expect(sentAlone.map((s) => s.query)).to.deep.equal([first]);
    // Alone in its batch, it goes as a read alone; the first read has not come back.
    await waitFor('the lingering read to be sent', async () => (sentAlone.length === 2 ? true : undefined), 10_000, 1);
    expect(sentAlone[1]!.query).to.equal(lingered);
    sentAlone[1]!.release([row(lingered, 0)]);
    expect(await answer).to.deep.equal([row(lingered, 0)]);
  });

  it('keeps a first read from the free slot while reads gather for it', async () => {
    const { read } = twoSlots({ fillTo: 8, lingerMs: 60_000 });
    void read(pageQuery(), WINDOW);
    expect(read.whenAlone(() => Promise.resolve('first read')), 'one batch out, nothing gathering').to.not.equal(undefined);
    const { read: gathering, sentAlone } = twoSlots({ fillTo: 8, lingerMs: 60_000 });
    void gathering(pageQuery(), WINDOW);
    void gathering(pageQuery(), WINDOW);
    await settle();
    expect(sentAlone, 'one read out, one gathering: a slot is free').to.have.length(1);
    expect(gathering.whenAlone(() => Promise.resolve('first read')), 'a read gathering for the free slot').to.equal(undefined);
  });

  it('never holds back a read with no lower window edge', async () => {
    const { read, statements, sentAlone } = oneSlot();
    const [held, waits] = [pageQuery(), pageQuery()];
    void read(held, WINDOW);
    void read(waits, WINDOW);
    const unbounded = pageQuery({ filters: { deviceId: uuid() } });
    void read(unbounded, { to: WINDOW.from });
    await settle();
    // The first read holds the slot; the second waits for it; the unbounded one went at once.
    expect(sentAlone.map((s) => s.query)).to.have.members([held, unbounded]);
    expect(statements).to.deep.equal([]);
  });

  it("batches device_id reads apart from the events table's, one run of rows per device, two devices of one project apart", async () => {
    const { read, statements, sentAlone } = oneSlot();
    const first = read(pageQuery(), WINDOW);
    const project = pageQuery();
    const [d1, d2] = [uuid().toUpperCase(), uuid()].map((deviceId) => ({ ...project, filters: { deviceId } }));
    const [plain, plain2] = [pageQuery(), pageQuery()];
    // Arrival order mixes the tables: each batch takes the reads of the table its oldest read reads.
    const reads = [read(d1!, WINDOW), read(plain, WINDOW), read(d2!, WINDOW), read(plain2, WINDOW)];
    await settle();
    sentAlone[0]!.release();
    await first;
    await settle();
    expect(statements).to.have.length(1);
    const devices = statements[0]!;
    expect(devices.sql).to.match(/FROM events_by_device\s/);
    expect(devices.sql).to.include('ORDER BY org_id DESC, project_id DESC, device_id DESC, occurred_at DESC, id DESC');
    expect(devices.sql).to.include('LIMIT {limit:UInt32} BY org_id, project_id, device_id');
    expect(devices.params).to.include({ r0_device_id: d1!.filters.deviceId, r1_device_id: d2!.filters.deviceId });
    devices.answer([row(d2!, 0), row(d1!, 1), row(d1!, 2)]);
    await settle();
    // The batch of the events table went once the device batch freed the slot.
    expect(statements).to.have.length(2);
    expect(statements[1]!.sql).to.match(/FROM events\s/);
    expect(statements[1]!.sql).to.include('LIMIT {limit:UInt32} BY org_id, project_id\n');
    statements[1]!.answer([row(plain2, 4), row(plain, 3)]);
    expect(await Promise.all(reads)).to.deep.equal([[row(d1!, 1), row(d1!, 2)], [row(plain, 3)], [row(d2!, 0)], [row(plain2, 4)]]);
    expect(sentAlone, 'only the first read went alone').to.have.length(1);
  });

  it('refuses to write one batch of reads of both tables', () => {
    const device = pageQuery({ filters: { deviceId: uuid() } });
    expect(() => batchSql([{ query: pageQuery(), window: WINDOW }, { query: device, window: WINDOW }], BOUNDS)).to.throw('one table');
  });

  for (const [failure, code, message, sentAloneAfter] of [
    ['refused as too many rows', '158', 'Limit for rows exceeded', true],
    ['refused as too many bytes', '307', 'Limit for rows or bytes to read exceeded', true],
    ["over the query's memory", '241', 'Memory limit (for query) exceeded', true],
    ["over the query's memory, as the engine now says it", '241', 'Query memory limit exceeded: would use 10.24 MiB, maximum: 9.54 MiB', true],
    ["over the server's memory", '241', 'Memory limit (total) exceeded', false],
    ['too many queries at once', '202', 'Too many simultaneous queries', false],
    ['a shard down', '279', 'All connection tries failed', false],
    ['unreachable', 'ECONNREFUSED', 'connect ECONNREFUSED', false],
  ] as const) {
    it(`when the store fails a batch as ${failure}, ${sentAloneAfter ? 'reads each of its pages alone, holding its slot until they end' : 'fails its pages'}, and sends the next batch`, async () => {
      const { read, statements, sentAlone } = oneSlot();
      const first = read(pageQuery(), WINDOW);
      const [x, y] = [pageQuery(), pageQuery()];
      const outcomes = Promise.all([x, y].map((q) => read(q, WINDOW).then((rows) => ({ rows }), (error: unknown) => ({ error }))));
      await settle();
      sentAlone[0]!.release();
      await first;
      await settle();
      const error = Object.assign(new Error(`Code: ${code}. DB::Exception: ${message}`), { code });
      statements[0]!.fail(error);
      await settle();
      const nextQueries = [pageQuery(), pageQuery(), pageQuery()];
      const next = nextQueries.map((q) => read(q, WINDOW));
      await settle();
      if (sentAloneAfter) {
        // The slot is held while they are out: the next reads wait.
        expect(sentAlone.slice(1).map((s) => s.query)).to.deep.equal([x, y]);
        expect(statements, 'nothing sent while the lone reads are out').to.have.length(1);
        for (const s of sentAlone.slice(1)) s.release([row(s.query, 1)]);
        expect((await outcomes).map((o) => ('rows' in o ? o.rows.length : -1))).to.deep.equal([1, 1]);
      } else {
        expect((await outcomes).map((o) => ('error' in o ? o.error : undefined))).to.deep.equal([error, error]);
        // The slot was free at once: the first next read took it, alone; none of the batch's went alone.
        expect(sentAlone.map((s) => s.query)).to.deep.equal([sentAlone[0]!.query, nextQueries[0]]);
        sentAlone[1]!.release();
      }
      await settle();
      // The slot is free again: the waiting reads leave as one batch.
      expect(statements, 'a batch sent after the failure').to.have.length(2);
      statements[1]!.answer([]);
      await Promise.all(next);
    });
  }

  it('reads the projects of a refused batch alone for a minute, then batches them again', async () => {
    let clock = 1_000_000;
    const { read, statements, sentAlone } = oneSlot(() => clock);
    const [x, y] = [pageQuery(), pageQuery()];
    const first = read(pageQuery(), WINDOW);
    const refusedReads = [read(x, WINDOW), read(y, WINDOW)];
    await settle();
    sentAlone[0]!.release();
    await first;
    await settle();
    statements[0]!.fail(Object.assign(new Error('Code: 158. DB::Exception: Limit for rows'), { code: '158' }));
    await settle();
    for (const s of sentAlone.slice(1)) s.release();
    await Promise.all(refusedReads);
    // The refused batch frees its slot once its lone reads have ended.
    await settle();
    const before = sentAlone.length;
    void read(x, WINDOW);
    void read(y, WINDOW);
    await settle();
    expect(sentAlone.length - before, 'sent alone at once, within the minute').to.equal(2);
    expect(statements).to.have.length(1);
    for (const s of sentAlone.slice(before)) s.release();
    clock += 60_001;
    const held = read(pageQuery(), WINDOW);
    const again = [read(x, WINDOW), read(y, WINDOW)];
    await settle();
    sentAlone.at(-1)!.release();
    await held;
    await settle();
    expect(statements, 'batched again after the minute').to.have.length(2);
    statements[1]!.answer([]);
    await Promise.all(again);
  });

  it('refuses batching values below one, which would hold reads forever', () => {
    const store = heldStore();
    for (const bad of [{ inFlight: 0 }, { maxBatch: 0 }, { rowsPerRead: 0.5 }, { memoryBytes: 0 }, { fillTo: 0 }, { lingerMs: 0 }]) {
      expect(() => batchedPageReads(store.transport, store.readAlone, { ...PAGE_BATCHING, ...bad })).to.throw('page batching');
    }
  });

  it('names each read’s parameters apart and bounds the rows and memory a batch may take', () => {
    const a = pageQuery({ filters: { domain: 'edge', since: '2026-01-01 00:00:00.000000' }, after: { occurredAt: '2026-01-02 00:00:00.000000', id: uuid() } });
    const b = pageQuery({ limit: 9 });
    const { sql, params } = batchSql([{ query: a, window: WINDOW }, { query: b, window: { from: WINDOW.from, to: '2026-01-03 00:00:00.000000' } }], BOUNDS);
    expect(params).to.deep.include({ r0_domain: 'edge', r0_after_id: a.after!.id, r1_window_to: '2026-01-03 00:00:00.000000', limit: 9 });
    for (const name of Object.keys(params)) expect(sql, name).to.include(`{${name}:`);
    expect(sql).to.not.match(/\{(org_id|project_id|domain|after_t|window_from):/);
    expect(sql).to.include('max_rows_to_read = 1000');
    expect(sql).to.include('max_memory_usage = 2000000');
  });

  it('sorts the rows of a batch of device reads, and reads the events table in its order', () => {
    const device = () => ({ query: pageQuery({ filters: { deviceId: uuid() } }), window: WINDOW });
    const project = () => ({ query: pageQuery(), window: WINDOW });
    expect(batchSql([device(), device()], BOUNDS).sql).to.include('optimize_read_in_order = 0');
    expect(batchSql([project(), project()], BOUNDS).sql).to.not.include('optimize_read_in_order');
  });
});
