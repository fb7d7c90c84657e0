import { expect } from 'chai';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { PAGE_BATCHING, type PageBatching } from '../../../src/store/batched-page-reads.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { RETENTION_TABLES } from '../../../src/store/retention.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import type { EventStore, FeedFilters, FeedQuery } from '../../../src/store/event-store.js';
import type { WindowPlan } from '../../../src/store/feed-windows.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent, microsFrom, uuid } from '../../support/factories.js';
import { isBatchOfReads, recordingTransport, type RecordingTransport } from '../../support/recording-transport.js';
import type { TestGateway } from '../../support/test-gateway.js';
import { walk } from '../../support/feed-walk.js';
import { describeOnEachStore } from './gateways.js';

/** Windows from one second, four times wider each time, so a walk reads many windows and each can share a batch. */
const WINDOWS: WindowPlan = { firstMs: 1000, growth: 4, widestMs: 1e12, probes: 40 };
const NOW = Date.parse('2026-02-01T00:00:05Z');
const EDGE = '2026-02-01T00:00:00.000000Z';
const PROJECTS = 12;
const FLEETS = [uuid(), uuid()];
const DEVICES = [uuid(), uuid()];
/** Hints learned by one walk would change the next walk's windows: every walk here starts from the plan. */
const NO_HINTS = { plan: (_: FeedQuery, base: WindowPlan) => base, learn() {} };

type Scope = Pick<FeedQuery, 'orgId' | 'projectId' | 'filters'>;

const FILTERS: [string, FeedFilters][] = [
  ['none', {}],
  ['domain', { domain: 'devices' }],
  ['entity', { entity: 'policy' }],
  ['fleet_id', { fleetId: FLEETS[0]! }],
  ['since and until', { since: toStoreTimestamp('2026-01-31T23:59:30Z'), until: toStoreTimestamp('2026-02-01T00:00:02Z') }],
  ['a filter nothing matches', { action: 'never-happened' }],
];


describeOnEachStore('feed pages read together: each page is the page read alone', (gateway) => {
  let gw: TestGateway;
  let sql: SqlTransport;
  let alone: EventStore;
  const scopes: Scope[] = [];
  /** The statements sent while a test ran, and the engine's codes of those that failed. */
  let counted: RecordingTransport;

  before(async () => {
    gw = await gateway();
    sql = await openStore(gw.config);
    counted = recordingTransport(sql);
    alone = createClickHouseEventStore(sql, { now: () => NOW, windows: WINDOWS, hints: NO_HINTS, batching: false });
    const writer = createClickHouseEventStore(sql);
    const insert = (events: readonly CanonicalEvent[]) => writer.insertEvents(events.map(storableEvent));
    // Each project: many events at one instant (a window edge), neighbours a microsecond
    // either side, a minute of one a second, older events hours back, one dated ahead of
    // the clock, and copies of some in parts of their own.
    for (let p = 0; p < PROJECTS; p += 1) {
      const base = { org_id: uuid(), project_id: uuid() };
      const events: CanonicalEvent[] = [];
      const add = (occurredAt: string) => {
        const n = events.length;
        events.push(
          canonicalEvent({ ...base, occurred_at: occurredAt, domain: ['telemetry', 'devices'][n % 2]!, entity: ['reading', 'policy'][Math.floor(n / 2) % 2]!, fleet_id: FLEETS[Math.floor(n / 3) % 2]!, device_id: DEVICES[n % 2]! }),
        );
      };
      for (let i = 0; i < 20 + p; i += 1) add(EDGE);
      add(microsFrom(EDGE, -1));
      add(microsFrom(EDGE, 1));
      for (let s = 0; s < 40; s += 1) add(new Date(Date.parse('2026-01-31T23:59:20Z') + s * 1000 + 250 + p).toISOString());
      add('2026-01-31T20:00:00Z');
      add('2026-03-01T00:00:00Z');
      await insert(events);
      await insert([events[0]!, events[20 + p]!, events[30]!]);
      scopes.push({ orgId: base.org_id, projectId: base.project_id, filters: {} });
    }
  });

  after(async () => {
    await sql.close();
  });

  beforeEach(() => {
    counted.clear();
  });

  const batched = (batching: PageBatching) => createClickHouseEventStore(counted, { now: () => NOW, windows: WINDOWS, hints: NO_HINTS, batching });
  const batches = () => counted.sent.filter(isBatchOfReads).length;

  for (const [name, filters] of FILTERS) {
    it(`walks of many projects at once give each project's pages as read alone, filter: ${name}`, async function () {
      this.timeout(300_000);
      for (const limit of [7, 50]) {
        const expected = [];
        for (const scope of scopes) expected.push(await walk(alone, { ...scope, filters }, [limit], undefined, 500));
        // One batch at a time: every read that comes while it is out waits for the next.
        const store = batched({ ...PAGE_BATCHING, inFlight: 1 });
        const got = await Promise.all(scopes.map((scope) => walk(store, { ...scope, filters }, [limit], undefined, 500)));
        expect(got, `pages of ${limit}`).to.deep.equal(expected);
      }
      expect(batches(), 'batches of reads sent').to.be.above(0);
    });
  }

  // The default batching: two batches out, and while one is, reads gather for the other
  // slot (docs/decisions/feed-batch-linger.md).
  for (const [name, filters] of [
    ['none', {}],
    ['device_id', { deviceId: DEVICES[0]! }],
  ] satisfies [string, FeedFilters][]) {
    it(`walks of many scopes at once, reads gathering for a free slot, give each scope's pages as read alone, filter: ${name}`, async function () {
      this.timeout(300_000);
      const expected = [];
      for (const scope of scopes) expected.push(await walk(alone, { ...scope, filters }, [7], undefined, 500));
      const store = batched(PAGE_BATCHING);
      const got = await Promise.all(scopes.map((scope) => walk(store, { ...scope, filters }, [7], undefined, 500)));
      expect(got).to.deep.equal(expected);
      expect(batches(), 'batches of reads sent').to.be.above(0);
    });
  }

  /** Every device remembered six seconds wide: a first page's window holds the events at the edge, a page by cursor's mostly falls short and reads on by the device's span. */
  const remembered = { plan: (_: FeedQuery, base: WindowPlan) => ({ ...base, firstMs: 6000 }), learn() {} };
  for (const [name, filters] of [
    ['device_id', { deviceId: DEVICES[0]! }],
    ['device_id and domain', { deviceId: DEVICES[1]!, domain: 'devices' }],
  ] satisfies [string, FeedFilters][]) {
    for (const [how, options] of [
      ['from remembered widths', { hints: remembered }],
      // No query of its own for any page: each device's span is read with the others'.
      ['through spans read together', { hints: NO_HINTS, firstReads: false }],
    ] as const) {
      it(`walks of many devices at once ${how} give each device's pages as its span reads them alone, filter: ${name}`, async function () {
        this.timeout(300_000);
        const store = createClickHouseEventStore(counted, { now: () => NOW, ...options, batching: { ...PAGE_BATCHING, inFlight: 1 } });
        for (const limit of [7, 50]) {
          const expected = [];
          for (const scope of scopes) expected.push(await walk(alone, { ...scope, filters }, [limit], undefined, 500));
          const got = await Promise.all(scopes.map((scope) => walk(store, { ...scope, filters }, [limit], undefined, 500)));
          expect(got, `pages of ${limit}`).to.deep.equal(expected);
        }
        expect(counted.sent.filter((statement) => isBatchOfReads(statement) && /FROM events_by_device\s/.test(statement)).length, 'batches of device reads sent').to.be.above(0);
        if (options.hints === NO_HINTS) {
          const spanReads = counted.params.filter((params, k) => /FROM device_spans_v2\s/.test(counted.sent[k]!) && Array.isArray(params?.['devices']));
          expect(spanReads.filter((params) => (params!['devices'] as readonly string[]).length > 1).length, 'spans read together').to.be.above(0);
          expect(counted.sent.filter((statement) => statement.includes('WITH (')), 'no span read as a scalar').to.deep.equal([]);
        }
      });
    }
  }

  it('reads each page alone when the store refuses a batch as larger than its reads may read', async function () {
    this.timeout(300_000);
    const expected = [];
    for (const scope of scopes) expected.push(await walk(alone, scope, [10], undefined, 500));
    const store = batched({ ...PAGE_BATCHING, inFlight: 1, rowsPerRead: 1 });
    const got = await Promise.all(scopes.map((scope) => walk(store, scope, [10], undefined, 500)));
    expect(got).to.deep.equal(expected);
    expect(batches(), 'batches tried').to.be.above(0);
    // Refused as TOO_MANY_ROWS, and for nothing else (a batch whose windows select no granule reads nothing, and passes).
    expect(counted.failed.length, 'batches refused').to.be.above(0);
    expect(new Set(counted.failed)).to.deep.equal(new Set([158]));
  });

  it("reads each device's page alone when a batch of device reads goes over the memory a batch may take", async function () {
    this.timeout(300_000);
    // Devices whose windows hold far more than a page: 300 events of 16 KB each within the
    // second after midnight, which the remembered six seconds reach. A batch of their reads
    // sorts every one of them; alone, each page reads its ten. In a month of their own,
    // dropped after, so that no later test on this store works around them.
    const month = Date.parse('2019-06-01T00:00:00Z');
    const heavy: Scope[] = [];
    const writer = createClickHouseEventStore(sql);
    try {
      for (let p = 0; p < 4; p += 1) {
        const base = { org_id: uuid(), project_id: uuid(), device_id: uuid() };
        const blob = 'x'.repeat(16_000);
        const events = Array.from({ length: 300 }, (_, k) => canonicalEvent({ ...base, occurred_at: new Date(month + k).toISOString(), payload: { blob } }));
        await writer.insertEvents(events.map(storableEvent));
        heavy.push({ orgId: base.org_id, projectId: base.project_id, filters: { deviceId: base.device_id } });
      }
      const now = () => month + 5000;
      const aloneThen = createClickHouseEventStore(sql, { now, windows: WINDOWS, hints: NO_HINTS, batching: false });
      const expected = [];
      for (const scope of heavy) expected.push(await walk(aloneThen, scope, [10], undefined, 500));
      const store = createClickHouseEventStore(counted, { now, hints: remembered, batching: { ...PAGE_BATCHING, inFlight: 1, memoryBytes: 8 * 1024 * 1024 } });
      const got = await Promise.all(heavy.map((scope) => walk(store, scope, [10], undefined, 500)));
      expect(got).to.deep.equal(expected);
      expect(got.map((pages) => pages.flat().length), 'events walked').to.deep.equal([300, 300, 300, 300]);
      // Refused as MEMORY_LIMIT_EXCEEDED, the batch's own, and for nothing else.
      expect(counted.failed.length, 'batches refused').to.be.above(0);
      expect(new Set(counted.failed)).to.deep.equal(new Set([241]));
    } finally {
      for (const table of RETENTION_TABLES) await sql.command(`ALTER TABLE ${table} DROP PARTITION 201906`);
    }
  });

  it('gives two walks of one project at once, with different filters and page sizes, their own pages', async function () {
    this.timeout(300_000);
    const [scope] = scopes;
    const walks: [FeedFilters, number][] = [
      [{}, 5],
      [{}, 9],
      [{ domain: 'telemetry' }, 4],
      [{ fleetId: FLEETS[1]! }, 6],
    ];
    const expected = [];
    for (const [filters, limit] of walks) expected.push(await walk(alone, { ...scope!, filters }, [limit], undefined, 500));
    const store = batched({ ...PAGE_BATCHING, inFlight: 1 });
    const others = scopes.slice(1).map((s) => walk(store, s, [8], undefined, 500));
    const got = await Promise.all(walks.map(([filters, limit]) => walk(store, { ...scope!, filters }, [limit], undefined, 500)));
    await Promise.all(others);
    expect(got).to.deep.equal(expected);
    expect(counted.failed).to.deep.equal([]);
  });
});
