import { expect } from 'chai';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import type { EventStore, FeedFilters, FeedQuery, FeedSlice } from '../../../src/store/event-store.js';
import { firstReadSql } from '../../../src/store/first-read.js';
import { msStoreText, WINDOW_PLAN } from '../../../src/store/feed-windows.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { NIL_UUID } from '../../../src/ids/uuid.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { recordingTransport, type RecordingTransport } from '../../support/recording-transport.js';
import { rowsRead } from '../../support/rows-read.js';
import type { TestGateway } from '../../support/test-gateway.js';
import { walk } from '../../support/feed-walk.js';
import { describeOnEachStore } from './gateways.js';

const NOW = Date.parse('2026-02-01T00:00:05Z');
const DAY = 86_400_000;
const days = (n: number) => new Date(NOW - n * DAY).toISOString();

type Scope = Pick<FeedQuery, 'orgId' | 'projectId' | 'filters'>;


describeOnEachStore('feed: a page that goes to the store alone starts with one query of its own', (gateway) => {
  let gw: TestGateway;
  let sql: SqlTransport;
  let counted: RecordingTransport;
  /** Every page alone, with no hints: what a gateway with room does for a scope it has not read. */
  let store: EventStore;
  /** The same pages walked from the plan's first window, as while the store is busy. */
  let walking: EventStore;

  before(async () => {
    gw = await gateway();
    sql = await openStore(gw.config);
    counted = recordingTransport(sql);
    const noHints = { plan: (_: FeedQuery, base: typeof WINDOW_PLAN) => base, learn() {} };
    store = createClickHouseEventStore(counted, { now: () => NOW, hints: noHints, batching: false });
    walking = createClickHouseEventStore(sql, { now: () => NOW, hints: noHints, firstReads: false });
  });

  after(() => sql.close());

  /** A fresh project with events at the instants given, domains alternating, one fleet for all. */
  async function projectAt(instants: readonly string[], fleetId: string = uuid()): Promise<Scope> {
    const base = { org_id: uuid(), project_id: uuid() };
    const events = instants.map((t, n) => canonicalEvent({ ...base, occurred_at: t, domain: ['telemetry', 'devices'][n % 2]!, fleet_id: fleetId }));
    await createClickHouseEventStore(sql).insertEvents(events.map(storableEvent));
    return { orgId: base.org_id, projectId: base.project_id, filters: {} };
  }

  async function page(scope: Scope, limit: number, after?: FeedQuery['after']): Promise<{ slice: FeedSlice; queries: number }> {
    const before = counted.sent.length;
    const slice = await store.listEvents({ ...scope, after, limit: limit + 1 });
    return { slice, queries: counted.sent.length - before };
  }

  it('answers the first page of an active project in one query, the page the walk gives', async () => {
    // An event an hour for 300 hours: the plan's first hour holds one of them.
    const scope = await projectAt(Array.from({ length: 300 }, (_, i) => days(i / 24 + 0.01)));
    const first = await page(scope, 50);
    expect(first.queries).to.equal(1);
    expect(first.slice.events).to.have.length(51);
    const next = await page(scope, 50, first.slice.events[49]!.position);
    expect(next.queries, 'the page after it, by its cursor').to.equal(1);
    expect(await walk(store, scope, [50], undefined, 500)).to.deep.equal(await walk(walking, scope, [50], undefined, 500));
  });

  it('answers an empty project, and a filter that matches nothing, in one query', async () => {
    const empty = await page({ orgId: uuid(), projectId: uuid(), filters: {} }, 50);
    expect(empty).to.deep.equal({ slice: { events: [] }, queries: 1 });
    const scope = await projectAt(Array.from({ length: 40 }, (_, i) => days(i * 9)));
    const nothing: FeedFilters[] = [{ action: 'never-happened' }, { domain: 'nowhere', entity: 'nothing' }, { fleetId: uuid() }];
    for (const filters of nothing) expect(await page({ ...scope, filters }, 50), JSON.stringify(filters)).to.deep.equal({ slice: { events: [] }, queries: 1 });
  });

  it("answers the first page of a project idle for a year in one query, at its newest event", async () => {
    const scope = await projectAt(Array.from({ length: 30 }, (_, i) => days(365 + i / 4)));
    const first = await page(scope, 10);
    expect(first.queries).to.equal(1);
    expect(first.slice.events).to.have.length(11);
    expect(await walk(store, scope, [10], undefined, 500)).to.deep.equal(await walk(walking, scope, [10], undefined, 500));
  });

  it("stops at the plan's reach in one query when the events lie below it, and the page after it is one query too", async () => {
    const scope = await projectAt(Array.from({ length: 12 }, (_, i) => days(2 * 365 + i)));
    const first = await page(scope, 10);
    expect(first.queries).to.equal(1);
    expect(first.slice.events).to.deep.equal([]);
    expect(first.slice.resumeAfter?.id).to.equal(NIL_UUID);
    const next = await page(scope, 10, first.slice.resumeAfter);
    expect(next.queries).to.equal(1);
    expect(next.slice.events).to.have.length(11);
  });

  for (const [share, most, what] of [
    [10, 1, 'reads the page of a fleet of a tenth of its project in the first read alone'],
    [40, 4, 'walks on below, paced from what the first read found, for a fleet of a fortieth of its project'],
  ] as const) {
    it(`${what}, giving the walk's pages`, async () => {
      const fleet = uuid();
      const other = uuid();
      const base = { org_id: uuid(), project_id: uuid() };
      // An event an hour, one in `share` the fleet's.
      const events = Array.from({ length: 40 * share }, (_, i) => canonicalEvent({ ...base, occurred_at: days(i / 24 + 0.01), fleet_id: i % share === 0 ? fleet : other }));
      await createClickHouseEventStore(sql).insertEvents(events.map(storableEvent));
      const scope = { orgId: base.org_id, projectId: base.project_id, filters: { fleetId: fleet } };
      const first = await page(scope, 20);
      expect(first.slice.events).to.have.length(21);
      expect(first.queries, 'the first read, then windows paced from what it found').to.be.within(most === 1 ? 1 : 2, most);
      expect(await walk(store, scope, [20], undefined, 500)).to.deep.equal(await walk(walking, scope, [20], undefined, 500));
    });
  }

  describe('rows read', () => {
    /** The events table and its spans, holding only what this test writes. */
    const EVENTS = `events_first_read_${uuid().replaceAll('-', '')}`;
    const SPANS = `event_spans_first_read_${uuid().replaceAll('-', '')}`;
    const onOwnTables = (text: string) => text.replace(/FROM events\b/, `FROM ${EVENTS}`).replace(/FROM event_spans\b/, `FROM ${SPANS}`);

    before(async () => {
      await sql.command(`CREATE TABLE ${EVENTS} AS events`);
      await sql.command(`CREATE TABLE ${SPANS} AS event_spans`);
    });

    after(async () => {
      await sql.command(`DROP TABLE IF EXISTS ${EVENTS}`);
      await sql.command(`DROP TABLE IF EXISTS ${SPANS}`);
    });

    it("reads a page's window, not rows in proportion to the months of the project's history", async () => {
      const [orgId, young, old] = [uuid(), uuid(), uuid()];
      // Two projects writing 2,000 events a month, one for three years and one for three months.
      for (const [projectId, months] of [[old, 36], [young, 3]] as const) {
        await sql.command(
          `INSERT INTO ${EVENTS} (org_id, project_id, occurred_at, id, domain, entity, action, payload)
          SELECT {org:UUID}, {project:UUID}, toDateTime64({now:String}, 6, 'UTC') - toIntervalSecond(number * 1296), generateUUIDv4(number), 'telemetry', 'reading', 'recorded', '{}'
          FROM numbers({count:UInt32})`,
          { org: orgId, project: projectId, now: msStoreText(NOW), count: 2000 * months },
        );
      }
      await sql.command(`INSERT INTO ${SPANS} SELECT org_id, project_id, domain, entity, action, min(occurred_at), max(occurred_at), count() FROM ${EVENTS} GROUP BY ALL`);
      const read = async (projectId: string, filters: FeedFilters = {}, topMs = NOW) => {
        const { sql: text, params } = firstReadSql({ orgId, projectId, filters, after: undefined, limit: 51 }, { top: msStoreText(topMs), widthUs: WINDOW_PLAN.firstMs * 1000, reach: undefined });
        return rowsRead(gw.config, onOwnTables(text), params);
      };
      const oldFirst = await read(old);
      const youngFirst = await read(young);
      // The window's granule or two, each read twice by lazy materialization, and the spans' one granule.
      const bound = 4 * 8192 + 8192;
      expect(oldFirst, `three years: ${oldFirst} rows read of ${2000 * 36}`).to.be.at.most(bound);
      expect(youngFirst, `three months: ${youngFirst} rows read`).to.be.at.most(bound);
      expect(await read(uuid()), 'an empty project: the spans alone').to.be.at.most(8192);
      expect(await read(old, { action: 'never-happened' }), 'a filter that matches nothing: the spans alone').to.be.at.most(8192);
      const deep = await read(old, { until: toStoreTimestamp(days(700)) }, NOW - 700 * DAY);
      expect(deep, `a page two years deep: ${deep} rows read`).to.be.at.most(bound);
    });
  });
});
