import { expect } from 'chai';
import fc from 'fast-check';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { feedSql } from '../../../src/store/feed-sql.js';
import type { EventRow } from '../../../src/store/event-rows.js';
import { fromEventRow, storableEvent } from '../../../src/store/event-rows.js';
import type { EventStore, FeedFilters, FeedQuery, FeedSlice } from '../../../src/store/event-store.js';
import { feedWindows, WINDOW_PLAN, type WindowPlan } from '../../../src/store/feed-windows.js';
import { readDistinct } from '../../../src/store/fold-copies.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { NIL_UUID } from '../../../src/ids/uuid.js';
import { canonicalEvent, microsFrom, uuid } from '../../support/factories.js';
import { recordingTransport, type RecordingTransport } from '../../support/recording-transport.js';
import type { TestGateway } from '../../support/test-gateway.js';
import { walk } from '../../support/feed-walk.js';
import { describeOnEachStore } from './gateways.js';

/**
 * Windows from one second, four times wider each time: a few minutes of history cross many
 * window edges and a month's boundary, and the probes reach hours back.
 */
const SMALL_WINDOWS: WindowPlan = { firstMs: 1000, growth: 4, widestMs: 1e12, probes: 40 };
/** Too few probes to reach the oldest events in one page: pages stop short and say where to go on. */
const FEW_PROBES: WindowPlan = { firstMs: 1000, growth: 8, widestMs: 1e12, probes: 5 };
/** The month boundary (a partition boundary) is a window edge: now − 1 s − 4 s. */
const NOW = Date.parse('2026-02-01T00:00:05Z');
const EDGE = '2026-02-01T00:00:00.000000Z';
const DEVICES = [uuid(), uuid()];
const FLEETS = [uuid(), uuid()];

type Scope = Pick<FeedQuery, 'orgId' | 'projectId' | 'filters'>;

/** The feed's plain query over the whole range (no windows), folded as the store folds. */
function plainStore(sql: SqlTransport): Pick<EventStore, 'listEvents'> {
  return {
    async listEvents(query) {
      const read = (after: FeedQuery['after'], limit: number) => {
        const { sql: text, params } = feedSql({ ...query, after, limit });
        return sql.query<EventRow>(text, params);
      };
      const rows = await readDistinct(read, query.after, query.limit);
      return { events: rows.map((row) => ({ event: fromEventRow(row), position: { occurredAt: row.occurred_at, id: row.id } })) };
    },
  };
}



/** Filter values that vary with different periods, so every filter picks a different mix. */
function varied(base: Partial<CanonicalEvent>, n: number, occurredAt: string): CanonicalEvent {
  return canonicalEvent({
    ...base,
    occurred_at: occurredAt,
    domain: ['telemetry', 'devices'][n % 2]!,
    entity: ['reading', 'enrollment', 'policy'][n % 3]!,
    action: ['recorded', 'queued'][Math.floor(n / 2) % 2]!,
    device_id: n % 5 === 4 ? null : DEVICES[n % 2]!,
    fleet_id: FLEETS[Math.floor(n / 3) % 2]!,
  });
}

const FILTERS = (): [string, FeedFilters][] => [
  ['none', {}],
  ['domain', { domain: 'devices' }],
  ['entity', { entity: 'policy' }],
  ['action', { action: 'queued' }],
  ['device_id', { deviceId: DEVICES[1]! }],
  ['fleet_id', { fleetId: FLEETS[0]! }],
  ['since', { since: toStoreTimestamp('2026-01-31T23:59:58.000000Z') }],
  ['until', { until: toStoreTimestamp(EDGE) }],
  ['since and until, with a filter', { since: toStoreTimestamp('2026-01-31T23:59:50Z'), until: toStoreTimestamp('2026-02-01T00:00:02Z'), domain: 'telemetry' }],
  ['a filter nothing matches', { action: 'never-happened' }],
];

describeOnEachStore('feed windows: bounded pages equal the plain query', (gateway) => {
  let gw: TestGateway;
  let sql: SqlTransport;
  let windowed: EventStore;
  let fewProbes: EventStore;
  let plain: Pick<EventStore, 'listEvents'>;
  let writer: EventStore;

  before(async () => {
    gw = await gateway();
    sql = await openStore(gw.config);
    windowed = createClickHouseEventStore(sql, { now: () => NOW, windows: SMALL_WINDOWS });
    // Without hints, every page starts at one second, so the gap of hours below the dense minutes takes several pages.
    fewProbes = createClickHouseEventStore(sql, { now: () => NOW, windows: FEW_PROBES, hints: { plan: (_, base) => base, learn() {} } });
    plain = plainStore(sql);
    writer = createClickHouseEventStore(sql);
  });

  after(async () => {
    await sql.command('SYSTEM START MERGES events');
    await sql.close();
  });

  /** Each call is an insert of its own: a part of its own while merges are stopped. */
  const insert = (events: readonly CanonicalEvent[]) => writer.insertEvents(events.map(storableEvent));

  /**
   * One project's history around the window edge that is also February's first instant:
   * many events at that instant, neighbours a microsecond either side, copies of events
   * in two parts on both sides of the edge, one id at two instants across it, a future
   * event above the first window, and older events, hours back, that only wider windows
   * reach.
   */
  async function history(): Promise<{ scope: Scope; total: number }> {
    const base = { org_id: uuid(), project_id: uuid() };
    const events: CanonicalEvent[] = [];
    let n = 0;
    const add = (occurredAt: string) => events.push(varied(base, n++, occurredAt));
    for (let i = 0; i < 25; i += 1) add(EDGE);
    add(microsFrom('2026-01-31T23:59:59.999Z', 999));
    add(microsFrom(EDGE, 1));
    for (const edge of ['2026-02-01T00:00:04Z', '2026-01-31T23:59:44Z', '2026-01-31T23:58:40Z']) {
      for (let i = 0; i < 6; i += 1) add(microsFrom(edge));
      add(microsFrom(edge, -1));
      add(microsFrom(edge, 1));
    }
    for (let s = 0; s < 40; s += 1) add(new Date(Date.parse('2026-01-31T23:59:20Z') + s * 1000 + 250).toISOString());
    add('2026-01-31T20:00:00Z');
    add('2026-01-31T10:00:00Z');
    add('2026-03-01T00:00:00Z');
    const sameIdAbove = events[0]!;
    const sameIdBelow = { ...varied(base, n++, microsFrom('2026-01-31T23:59:59.999Z', 999)), id: sameIdAbove.id };
    events.push(sameIdBelow);
    await sql.command('SYSTEM STOP MERGES events');
    // Two halves in two parts, then copies of events at and around the edges, in parts of their own.
    await insert(events.slice(0, 40));
    await insert(events.slice(40));
    await insert([events[0]!, events[3]!, events[25]!, events[26]!, events[30]!]);
    await insert([events[3]!, events[27]!, events[31]!, events[60]!]);
    return { scope: { orgId: base.org_id, projectId: base.project_id, filters: {} }, total: events.length };
  }

  let project: { scope: Scope; total: number };
  before(async () => {
    project = await history();
  });

  it('holds the history in many parts, with copies, so the windows are tried against what they are meant for', async () => {
    const [row] = await sql.query<{ parts: string; rows: string; ids: string }>(
      'SELECT uniqExact(_part) AS parts, count() AS rows, uniqExact(occurred_at, id) AS ids FROM events WHERE org_id = {o:UUID} AND project_id = {p:UUID}',
      { o: project.scope.orgId, p: project.scope.projectId },
    );
    expect(Number(row!.parts)).to.be.at.least(4);
    expect(Number(row!.rows)).to.be.above(Number(row!.ids));
    expect(Number(row!.ids)).to.equal(project.total);
    const windows = feedWindows({ after: undefined, filters: {} }, NOW, SMALL_WINDOWS);
    expect(windows[1], 'February begins at a window edge').to.deep.include({ from: toStoreTimestamp(EDGE) });
  });

  for (const [name, filters] of FILTERS()) {
    it(`gives the plain query's pages event for event, filter: ${name}`, async function () {
      this.timeout(300_000);
      const scope = { ...project.scope, filters };
      for (const limits of [[7], [3, 11, 2], [200]]) {
        const expected = await walk(plain, scope, limits);
        expect(await walk(windowed, scope, limits), `pages of ${limits.join(', ')}`).to.deep.equal(expected);
      }
    });
  }

  it('with few probes per page, stops pages short and still yields every event once, in order', async function () {
    this.timeout(300_000);
    for (const [name, filters] of FILTERS()) {
      const scope = { ...project.scope, filters };
      const expected = (await walk(plain, scope, [10])).flat();
      const short = { pages: 0 };
      const pages = await walk(fewProbes, scope, [10], short);
      expect(pages.flat(), name).to.deep.equal(expected);
      if (name === 'none') expect(short.pages, 'pages that stopped short').to.be.above(0);
    }
  });

  it('ends the walk of a filter that matches nothing in its first page when the scope has a span, and at the project\'s oldest event, not in 1900, when it has none', async function () {
    this.timeout(300_000);
    // The span of (project, action) holds nothing: the first empty window ends the walk.
    const spanned = await walk(fewProbes, { ...project.scope, filters: { action: 'never-happened' } }, [10]);
    expect(spanned).to.deep.equal([[]]);
    // A fleet filter has no span. A page's five windows span 78 minutes: about 11 pages
    // reach the oldest event, 14 hours back, and nothing ends the walk there but the
    // project's own oldest event (1900 is a million pages on).
    const unspanned = await walk(fewProbes, { ...project.scope, filters: { fleetId: uuid() } }, [10]);
    expect(unspanned.flat()).to.deep.equal([]);
    expect(unspanned.length).to.be.within(2, 40);
    // A device's page is never short while its device has more (docs/decisions/device-pages.md): one page.
    expect(await walk(fewProbes, { ...project.scope, filters: { deviceId: uuid() } }, [10])).to.deep.equal([[]]);
  });

  it('matches the plain query on random histories and random page walks', async function () {
    this.timeout(600_000);
    const instants = ['2026-02-01T00:00:00Z', '2026-01-31T23:59:59Z', '2026-02-01T00:00:04Z', '2026-01-31T23:59:44Z', '2026-01-31T23:40:00Z', '2026-03-01T00:00:00Z'];
    const eventSpec = fc.record({
      instant: fc.constantFrom(...instants),
      micros: fc.constantFrom(-1, 0, 0, 0, 1),
      filterSeed: fc.nat(30),
      copies: fc.integer({ min: 1, max: 3 }),
    });
    // Any plan whose windows span a minute or more a page: the walk over twenty minutes of history stays short.
    const plans = fc
      .record({
        firstMs: fc.integer({ min: 100, max: 4000 }),
        growth: fc.integer({ min: 1, max: 8 }),
        widestMs: fc.integer({ min: 4000, max: 24 * 3_600_000 }),
        probes: fc.integer({ min: 2, max: 12 }),
      })
      .filter((p) => Array.from({ length: p.probes }, (_, k) => Math.min(p.widestMs, p.firstMs * p.growth ** k)).reduce((a, b) => a + b, 0) >= 60_000);
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventSpec, { minLength: 0, maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 4 }),
        plans,
        fc.constantFrom(...FILTERS()),
        fc.integer({ min: -5000, max: 5000 }),
        // A page's first read of its own (the store has room), or the walk alone (the store is busy).
        fc.boolean(),
        async (specs, limits, plan, [, filters], nowShift, firstReads) => {
          const base = { org_id: uuid(), project_id: uuid() };
          const events = specs.map((s, n) => varied(base, s.filterSeed + n, microsFrom(s.instant, s.micros)));
          // Copies in later inserts of their own: other parts, both sides of whatever edge falls near them.
          for (let copy = 1; copy <= 3; copy += 1) {
            const batch = events.filter((_, i) => specs[i]!.copies > copy - 1);
            if (batch.length > 0) await insert(batch);
          }
          const scope = { orgId: base.org_id, projectId: base.project_id, filters };
          const store = createClickHouseEventStore(sql, { now: () => NOW + nowShift, windows: plan, ...(firstReads ? {} : { firstReads: false as const }) });
          const expected = await walk(plain, scope, limits);
          const short = { pages: 0 };
          const got = await walk(store, scope, limits, short);
          expect(got.flat(), 'every event once, in order').to.deep.equal(expected.flat());
          // Where no page stopped at its bound, the pages themselves are the plain query's.
          if (short.pages === 0) expect(got).to.deep.equal(expected);
        },
      ),
      { numRuns: Number(process.env['FEED_WINDOW_RUNS'] ?? 25) },
    );
  });
});

describeOnEachStore('feed windows: the probes a page makes are bounded, walking from its first window as a busy store does', (gateway) => {
  let sql: SqlTransport;
  let counted: RecordingTransport;
  let store: EventStore;
  let plain: Pick<EventStore, 'listEvents'>;

  before(async () => {
    const gw = await gateway();
    sql = await openStore(gw.config);
    counted = recordingTransport(sql);
    // The product's plan, with no hints, so every page starts at one hour.
    store = createClickHouseEventStore(counted, { now: () => NOW, windows: WINDOW_PLAN, hints: { plan: (_, base) => base, learn() {} }, firstReads: false });
    plain = plainStore(sql);
  });

  after(() => sql.close());

  /** Events of a fresh project at the instants given, varied across the filters. */
  async function projectAt(instants: readonly string[]): Promise<Scope> {
    const base = { org_id: uuid(), project_id: uuid() };
    await createClickHouseEventStore(sql).insertEvents(instants.map((t, n) => storableEvent(varied(base, n, t))));
    return { orgId: base.org_id, projectId: base.project_id, filters: {} };
  }

  /** One page of `limit` and the queries it cost. */
  async function page(scope: Scope, limit: number, after?: FeedQuery['after']): Promise<{ slice: FeedSlice; queries: number }> {
    const before = counted.sent.length;
    const slice = await store.listEvents({ ...scope, after, limit: limit + 1 });
    return { slice, queries: counted.sent.length - before };
  }

  const days = (n: number, from = NOW) => new Date(from - n * 86_400_000).toISOString();
  /** How far below its start the plan's windows reach: the sum of its twenty widths. */
  const reachMs = () => Array.from({ length: WINDOW_PLAN.probes }, (_, k) => Math.min(WINDOW_PLAN.widestMs, WINDOW_PLAN.firstMs * WINDOW_PLAN.growth ** k)).reduce((a, b) => a + b, 0);

  it('answers the first page of an empty project in two queries: the first window, the span that holds nothing', async () => {
    const scope = { orgId: uuid(), projectId: uuid(), filters: {} };
    const { slice, queries } = await page(scope, 50);
    expect(slice).to.deep.equal({ events: [] });
    expect(queries).to.equal(2);
  });

  it("jumps to a project's last events a year back in a few queries, and gives the plain query's pages", async function () {
    this.timeout(120_000);
    const scope = await projectAt(Array.from({ length: 30 }, (_, i) => days(365 + i / 4)));
    const first = await page(scope, 10);
    expect(first.queries, 'queries of the first page: one window, the span, two windows down from its newest event').to.equal(4);
    expect(first.slice.events).to.have.length(11);
    expect(await walk(store, scope, [10])).to.deep.equal(await walk(plain, scope, [10]));
  });

  it('answers a filter that matches nothing in a year of history in two queries where a span answers it, six where none does, one for a device, and ends the walk there', async () => {
    const scope = await projectAt(Array.from({ length: 40 }, (_, i) => days(i * 9)));
    const cases: [FeedFilters, number][] = [
      [{ action: 'never-happened' }, 2],
      [{ domain: 'nowhere', entity: 'nothing' }, 2],
      // A device no event named, on a busy store: its span, read with any other device's, says so.
      [{ deviceId: uuid() }, 1],
      // Fleet has no span: four windows, a skip that finds nothing, the check below.
      [{ fleetId: uuid() }, 6],
    ];
    for (const [filters, expected] of cases) {
      const { slice, queries } = await page({ ...scope, filters }, 50);
      expect(slice, JSON.stringify(filters)).to.deep.equal({ events: [] });
      expect(queries, JSON.stringify(filters)).to.equal(expected);
    }
  });

  it("stops a page at the plan's reach when the project's events lie two years below it, in two queries, and the walk still finds them", async function () {
    this.timeout(120_000);
    const scope = await projectAt(Array.from({ length: 12 }, (_, i) => days(2 * 365 + i)));
    const first = await page(scope, 10);
    expect(first.slice.events).to.deep.equal([]);
    expect(first.slice.resumeAfter, 'a cursor at the reach').to.deep.equal({ occurredAt: toStoreTimestamp(new Date(NOW - reachMs()).toISOString()), id: NIL_UUID });
    expect(first.queries, 'the first window, the span whose newest event lies below the reach').to.equal(2);
    const next = await page(scope, 10, first.slice.resumeAfter);
    expect(next.queries, 'queries of the page after it: one window, the span, three windows down from its newest event, the last two paced').to.equal(5);
    expect(next.slice.events).to.have.length(11);
    expect((await walk(store, scope, [10])).flat()).to.deep.equal((await walk(plain, scope, [10])).flat());
  });

  it('ends a page bounded by since where the span cannot tell: events above until and below since, none between', async function () {
    this.timeout(120_000);
    const project = await projectAt([days(1), days(800)]);
    // The page starts at until, 100 days back; its reach (~1.4 years below) lies above since.
    const scope = { ...project, filters: { until: toStoreTimestamp(days(100)), since: toStoreTimestamp(days(700)) } };
    const { slice } = await page(scope, 10);
    expect(slice).to.deep.equal({ events: [] });
    expect(await walk(store, scope, [10])).to.deep.equal(await walk(plain, scope, [10]));
  });

  it('paces a sparse page: once a window finds a few events, the next is sized for the rest, and the page is the plain query\'s', async function () {
    this.timeout(120_000);
    // An event every ten days, from a day back: 1 h, 8 h, then 64 h finds the first; unpaced,
    // 21 days and 31 days at a time would find two or three a window.
    const scope = await projectAt(Array.from({ length: 40 }, (_, i) => days(1 + i * 10)));
    const { slice, queries } = await page(scope, 30);
    expect(slice.events, 'a full page').to.have.length(31);
    expect(queries, 'three windows, then two paced ones').to.be.at.most(5);
    expect(await walk(store, scope, [30])).to.deep.equal(await walk(plain, scope, [30]));
  });

  it('never makes more than the plan\'s probes and the one check below, on any history', async function () {
    this.timeout(300_000);
    // Sparse bursts far apart: every gap is a skip, and the probes run out before the page fills.
    const scope = await projectAt(Array.from({ length: 40 }, (_, i) => days(i * 11 + (i % 3) / 10)));
    for (const filters of FILTERS().map(([, f]) => f)) {
      const { queries } = await page({ ...scope, filters }, 200);
      expect(queries, JSON.stringify(filters)).to.be.at.most(WINDOW_PLAN.probes + 1);
    }
    expect(await walk(store, scope, [7])).to.deep.equal(await walk(plain, scope, [7]));
  });
});
