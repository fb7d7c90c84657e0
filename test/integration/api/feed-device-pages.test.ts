import { expect } from 'chai';
import fc from 'fast-check';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { DEVICE_EVENTS_TABLE, DEVICE_SPANS_TABLE } from '../../../src/store/device-events.js';
import { deviceRestSql, deviceWindowSql, spanWindowFrom } from '../../../src/store/device-pages.js';
import { deviceSpansSql } from '../../../src/store/device-span-reads.js';
import { eventRowText } from '../../../src/store/event-row-text.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import { migrate } from '../../../src/store/migrations.js';
import type { FeedFilters, FeedQuery } from '../../../src/store/event-store.js';
import { filterConditions } from '../../../src/store/filter-sql.js';
import type { SqlParam, SqlTransport } from '../../../src/store/sql-transport.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { recordingTransport } from '../../support/recording-transport.js';
import { rowsRead } from '../../support/rows-read.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

const DAY = 86_400_000;
/** The device table's granule (migrations.ts): what one month of a device's history may cost a page. */
const GRANULE = 1024;

/** An event `daysAgo` days before `now` of the tenant's project; override any field. */
const eventOf = (tenant: Tenant, daysAgo: number, fields: Partial<CanonicalEvent> = {}, now = Date.now()): CanonicalEvent =>
  canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, occurred_at: new Date(now - daysAgo * DAY).toISOString(), ...fields });

/** The scope's events in feed order, copies folded, read from the events table in one query: what every walk of its pages must return. */
async function expectedIds(sql: SqlTransport, tenant: Tenant, filters: FeedFilters): Promise<string[]> {
  const params: Record<string, SqlParam> = { org_id: tenant.orgId, project_id: tenant.projectId };
  const where = ['org_id = {org_id:UUID}', 'project_id = {project_id:UUID}', ...filterConditions(filters, params)];
  const rows = await sql.query<{ id: string }>(
    `SELECT id FROM events WHERE ${where.join(' AND ')} ORDER BY occurred_at DESC, id DESC LIMIT 1 BY occurred_at, id`,
    params,
  );
  return rows.map((r) => r.id);
}

describeOnEachStore('feed: a device page is one short read of the device table', (gateway) => {
  let gw: TestGateway;
  let sql: SqlTransport;

  before(async () => {
    gw = await gateway();
    sql = await openStore(gw.config);
  });

  after(async () => {
    await sql.close();
  });

  /** Every page of the scope through the API, `limit` at a time: the ids, each page's size, its has_more, whether its cursor is null. */
  async function walk(tenant: Tenant, query: string, limit: number) {
    const headers = await tenant.headers();
    const pages: { ids: string[]; count: number; hasMore: boolean; cursorNull: boolean }[] = [];
    let cursor: string | null = null;
    do {
      const after: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?limit=${limit}${query}${after}`, { headers });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const { items } = res.body.data;
      pages.push({ ids: items.map((e) => e.id), count: res.body.meta.count, hasMore: res.body.meta.has_more, cursorNull: res.body.meta.next_cursor === null });
      cursor = res.body.meta.next_cursor;
    } while (cursor !== null && pages.length < 200);
    return pages;
  }

  it("plans a device page's window on the device table's key, in reverse order, opening only the months the window reaches", async () => {
    const tenant = gw.tenant();
    const device = uuid();
    // Two years of a device that writes every other day: a page of 51 is about a quarter.
    await gw.seed(Array.from({ length: 365 }, (_, k) => eventOf(tenant, k * 2, { device_id: device })));
    const { sql: query, params } = deviceWindowSql({ orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device }, after: undefined, limit: 51 });
    const plan = (await sql.query<{ explain: string }>(`EXPLAIN indexes = 1 ${query}`, params)).map((r) => r.explain).join('\n');
    expect(plan).to.match(new RegExp(`ReadFromMergeTree \\(\\w+\\.${DEVICE_EVENTS_TABLE}\\)`));
    expect(plan).to.match(/Read type: InReverseOrder/);
    expect(plan.slice(plan.indexOf('PrimaryKey'))).to.match(/device_id in \[/);
    // The window's edge is known before the read is planned: the months below it are not opened.
    const partitions = /Condition: \(toYYYYMM\(occurred_at\) in \[(\d{6}), \+Inf\)\)/.exec(plan);
    expect(partitions, plan).to.not.equal(null);
    const yyyymm = (monthsAgo: number) => {
      const at = new Date();
      at.setUTCMonth(at.getUTCMonth() - monthsAgo, 1);
      return at.getUTCFullYear() * 100 + at.getUTCMonth() + 1;
    };
    // A page of 51 and its margin, at one event every other day: about seven months of the device's twenty-four.
    expect(Number(partitions![1]), 'the oldest month the window opens').to.be.within(yyyymm(9), yyyymm(5));
  });

  it("gives a device's window the same edge from its span read with other devices' as from the window's own scalar", async () => {
    const tenant = gw.tenant();
    const [device, other, unnamed] = [uuid(), uuid(), uuid()];
    await gw.seed([
      ...Array.from({ length: 200 }, (_, k) => eventOf(tenant, k * 3 + 0.25, { device_id: device })),
      ...Array.from({ length: 30 }, (_, k) => eventOf(tenant, k / 7, { device_id: other })),
    ]);
    const spansSql = deviceSpansSql([device, other, unnamed].map((deviceId) => ({ orgId: tenant.orgId, projectId: tenant.projectId, deviceId })));
    const spans = new Map((await sql.query<{ device_id: string; oldest: string; newest: string; events: string }>(spansSql.sql, spansSql.params)).map((r) => [r.device_id, { ...r, events: Number(r.events) }]));
    expect(spans.has(unnamed), 'a device no event named has no span').to.equal(false);
    const positions = await sql.query<{ occurred_at: string; id: string }>(`SELECT occurred_at, id FROM ${DEVICE_EVENTS_TABLE} WHERE device_id = {device:UUID} ORDER BY occurred_at DESC, id DESC`, { device });
    const cases: [string, FeedQuery][] = [];
    for (const deviceId of [device, other]) {
      const base: FeedQuery = { orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId }, after: undefined, limit: 21 };
      cases.push([`${deviceId} first page`, base]);
    }
    const until = toStoreTimestamp(new Date(Date.now() - 100 * DAY).toISOString());
    cases.push(['until', { orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device, until }, after: undefined, limit: 21 }]);
    for (const k of [20, 150, 190]) cases.push([`cursor at the ${k}th event`, { orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device }, after: { occurredAt: positions[k]!.occurred_at, id: positions[k]!.id }, limit: 21 }]);
    for (const [name, query] of cases) {
      const { sql: text, params } = deviceWindowSql(query);
      const [row] = await sql.query<{ window_from: string }>(text, params);
      expect(row, name).to.not.equal(undefined);
      expect(spanWindowFrom(spans.get(query.filters.deviceId!)!, query), name).to.equal(row!.window_from);
    }
  });

  it('answers a device page in one query where its span sizes the window, in two at most with other filters, and the next page from the width the first needed, however far back its history reaches', async () => {
    const tenant = gw.tenant();
    const [device, other, fleet] = [uuid(), uuid(), uuid()];
    // Three years of a device that writes every ten days, beside a busy one.
    const history = Array.from({ length: 110 }, (_, k) => eventOf(tenant, k * 10, { device_id: device, fleet_id: k % 2 === 0 ? fleet : uuid(), domain: k % 3 === 0 ? 'ota' : 'telemetry' }));
    const busy = Array.from({ length: 300 }, (_, k) => eventOf(tenant, k / 10, { device_id: other }));
    await gw.seed([...history, ...busy]);
    const counted = recordingTransport(sql);
    const store = createClickHouseEventStore(counted, { batching: false });
    // The most queries of the first page and of the second. The second starts from the width
    // the first needed: one read while it holds the page; the ota page is the last of its
    // device, so the remembered window falls short and the span's read follows, its window
    // then empty (nothing below says where the device ends) and the rest read.
    for (const [filters, most] of [
      [{ deviceId: device }, [1, 1]],
      [{ deviceId: device, fleetId: fleet }, [2, 1]],
      [{ deviceId: device, domain: 'ota' }, [2, 3]],
    ] satisfies [FeedFilters, number[]][]) {
      const expected = await expectedIds(sql, tenant, filters);
      const query: FeedQuery = { orgId: tenant.orgId, projectId: tenant.projectId, filters, after: undefined, limit: 21 };
      counted.clear();
      const first = await store.listEvents(query);
      expect(first.events.map((e) => e.event.id), JSON.stringify(filters)).to.deep.equal(expected.slice(0, 21));
      const firstQueries = counted.sent.length;
      const after = first.events.at(-1)!.position;
      const second = await store.listEvents({ ...query, after });
      expect(second.events.map((e) => e.event.id)).to.deep.equal(expected.slice(21, 42));
      expect(first.resumeAfter ?? second.resumeAfter, 'a device page never stops short of its range').to.equal(undefined);
      const queries = [firstQueries, counted.sent.length - firstQueries];
      expect(queries, `queries of each page, ${JSON.stringify(filters)}`).to.satisfy((n: number[]) => n.every((q, k) => q >= 1 && q <= most[k]!));
    }
  });

  it('reads the page of a device a recent full page showed in one plain read of the width that page needed, and reads on by its span where that window falls short', async () => {
    const tenant = gw.tenant();
    const device = uuid();
    // A device that wrote daily for a year, and every tenth day in the two years before.
    const daily = Array.from({ length: 365 }, (_, k) => eventOf(tenant, k + 0.5, { device_id: device }));
    const sparse = Array.from({ length: 73 }, (_, k) => eventOf(tenant, 366 + k * 10, { device_id: device }));
    await gw.seed([...daily, ...sparse]);
    const counted = recordingTransport(sql);
    const store = createClickHouseEventStore(counted, { batching: false });
    const query: FeedQuery = { orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device }, after: undefined, limit: 21 };
    const ids = async (q: FeedQuery) => (await store.listEvents(q)).events.map((e) => e.event.id);
    const expected = await expectedIds(sql, tenant, { deviceId: device });
    expect(await ids(query), 'the first page, sized by the span').to.deep.equal(expected.slice(0, 21));
    counted.clear();
    expect(await ids(query), 'the same page again').to.deep.equal(expected.slice(0, 21));
    expect(counted.sent, 'one read').to.have.length(1);
    expect(counted.sent[0]).to.match(new RegExp(`FROM ${DEVICE_EVENTS_TABLE}\\s`)).and.to.include('{window_from:').and.not.include(DEVICE_SPANS_TABLE);
    // Deep in, where the device wrote a tenth as often: the remembered three weeks hold two or three events.
    const until = toStoreTimestamp(new Date(Date.now() - 400 * DAY).toISOString());
    counted.clear();
    expect(await ids({ ...query, filters: { deviceId: device, until } })).to.deep.equal((await expectedIds(sql, tenant, { deviceId: device, until })).slice(0, 21));
    expect(counted.sent.length, 'the window, the span\'s window below it, and at most the rest').to.be.within(2, 3);
    expect(counted.sent.slice(1).join('\n')).to.include(DEVICE_SPANS_TABLE);
  });

  it('answers the page of a device no event has named in two reads that open no part of the device table', async () => {
    const tenant = gw.tenant();
    await gw.seed([eventOf(tenant, 1)]);
    const counted = recordingTransport(sql);
    const query: FeedQuery = { orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: uuid() }, after: undefined, limit: 51 };
    const page = await createClickHouseEventStore(counted, { batching: false }).listEvents(query);
    expect(page).to.deep.equal({ events: [] });
    expect(counted.sent, 'the window, then the rest').to.have.length(2);
    for (const { sql: text, params } of [deviceWindowSql(query), deviceRestSql(query)]) {
      const plan = (await sql.query<{ explain: string }>(`EXPLAIN indexes = 1 ${text}`, params)).map((r) => r.explain).join('\n');
      const device = plan.slice(plan.indexOf(`.${DEVICE_EVENTS_TABLE})`));
      expect(/Granules: (\d+)/.exec(device.slice(device.lastIndexOf('Granules')))?.[1] ?? '0', plan).to.equal('0');
    }
  });

  it('gains the device table at the next start of an earlier version: its view, the backfill of earlier events, and the projection it replaced dropped', async function () {
    this.timeout(120_000);
    const tenant = gw.tenant();
    const device = uuid();
    const page = async () =>
      (await createClickHouseEventStore(sql).listEvents({ orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device }, after: undefined, limit: 10 })).events.map((e) => e.event.id);
    const projections = async () => Number((await sql.query<{ n: string }>("SELECT count() AS n FROM system.projections WHERE database = currentDatabase() AND table = 'events'"))[0]!.n);
    // An earlier version's table: device pages through a projection, no device table kept, no backfill on record.
    await sql.command(`DROP VIEW IF EXISTS ${DEVICE_EVENTS_TABLE}_view`);
    await sql.command("ALTER TABLE events MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild'");
    await sql.command('ALTER TABLE events ADD PROJECTION IF NOT EXISTS by_device (SELECT * ORDER BY (org_id, project_id, device_id, occurred_at, id))');
    const earlier = [eventOf(tenant, 40, { device_id: device }), eventOf(tenant, 2, { device_id: device })];
    await sql.insert('events', earlier.map((e) => eventRowText(storableEvent(e))));
    await sql.command('TRUNCATE TABLE store_backfills');
    expect(await page(), 'written while nothing kept the device table').to.deep.equal([]);
    expect(await projections()).to.equal(1);

    await migrate(sql, { kind: 'single' }, { settleMs: 10 });
    expect(await page()).to.deep.equal([earlier[1]!.id, earlier[0]!.id]);
    expect(await projections(), 'the projection dropped').to.equal(0);
    // Written by a writer that is not the store (SQL): the view keeps the device table.
    const later = eventOf(tenant, 1, { device_id: device });
    await sql.insert('events', [eventRowText(storableEvent(later))]);
    expect(await page()).to.deep.equal([later.id, earlier[1]!.id, earlier[0]!.id]);
  });

  it("fails an insert whose device table cannot take it, and the probe with it, so the batch is stored again and its device's page shows it once", async () => {
    const tenant = gw.tenant();
    const device = uuid();
    const event = eventOf(tenant, 1, { device_id: device });
    const store = createClickHouseEventStore(sql);
    let [insertFailure, probeFailure]: unknown[] = [];
    await sql.command(`DETACH TABLE ${DEVICE_EVENTS_TABLE}`);
    try {
      await store.insertEvents([storableEvent(event)]).catch((error: unknown) => (insertFailure = error));
      await store.probeWrite().catch((error: unknown) => (probeFailure = error));
    } finally {
      await sql.command(`ATTACH TABLE ${DEVICE_EVENTS_TABLE}`);
    }
    expect(insertFailure, 'the insert, with the device table gone').to.be.an('error');
    expect(probeFailure, "the probe: the store's fault, not the rows'").to.be.an('error');
    // As the consumer does: the batch again, once the store takes writes.
    await store.probeWrite();
    await store.insertEvents([storableEvent(event)]);
    const page = await store.listEvents({ orgId: tenant.orgId, projectId: tenant.projectId, filters: { deviceId: device }, after: undefined, limit: 10 });
    expect(page.events.map((e) => e.event.id)).to.deep.equal([event.id]);
  });

  describe('rows read', () => {
    /** The device table and its spans, holding only what this test writes: in the shared tables other suites' parts would add granules of their own. */
    const TABLE = `devices_rows_read_${uuid().replaceAll('-', '')}`;
    const SPANS = `device_spans_rows_read_${uuid().replaceAll('-', '')}`;
    const onOwnTables = (text: string) => text.replace(new RegExp(`FROM ${DEVICE_EVENTS_TABLE}\\b`), `FROM ${TABLE}`).replace(new RegExp(`FROM ${DEVICE_SPANS_TABLE}\\b`), `FROM ${SPANS}`);

    before(async () => {
      await sql.command(`CREATE TABLE ${TABLE} AS ${DEVICE_EVENTS_TABLE}`);
      await sql.command(`CREATE TABLE ${SPANS} AS ${DEVICE_SPANS_TABLE}`);
    });

    after(async () => {
      await sql.command(`DROP TABLE IF EXISTS ${TABLE}`);
      await sql.command(`DROP TABLE IF EXISTS ${SPANS}`);
    });

    it("reads what the page needs, not rows in proportion to the device's events or the months of its history", async () => {
      const [orgId, projectId, old, young] = [uuid(), uuid(), uuid(), uuid()];
      // Two devices writing 2,000 events a month: one for three years, one for three months.
      for (const [device, months] of [[old, 36], [young, 3]] as const) {
        await sql.command(
          `INSERT INTO ${TABLE} (org_id, project_id, occurred_at, id, domain, entity, action, device_id, fleet_id, payload)
          SELECT {org:UUID}, {project:UUID}, now64(6, 'UTC') - toIntervalSecond(number * 1296), generateUUIDv4(number), 'telemetry', 'reading', 'recorded', {device:UUID}, NULL, '{}'
          FROM numbers({count:UInt32})`,
          { org: orgId, project: projectId, device, count: 2000 * months },
        );
      }
      await sql.command(`INSERT INTO ${SPANS} SELECT org_id, project_id, device_id, min(occurred_at), max(occurred_at), count() FROM ${TABLE} GROUP BY org_id, project_id, device_id`);
      const read = async (deviceId: string, after?: FeedQuery['after']) => {
        const { sql: text, params } = deviceWindowSql({ orgId, projectId, filters: { deviceId }, after, limit: 51 });
        return rowsRead(gw.config, onOwnTables(text), params);
      };
      const oldFirst = await read(old);
      const youngFirst = await read(young);
      // The window's own granules (a page and its margin fit in two), each read twice by lazy
      // materialization, and the spans' one granule: nothing that grows with history.
      const bound = 4 * GRANULE + 8192;
      expect(oldFirst, `three years' device: ${oldFirst} rows read of its ${2000 * 36}`).to.be.at.most(bound);
      expect(youngFirst, `three months' device: ${youngFirst} rows read`).to.be.at.most(bound);
      expect(Math.abs(oldFirst - youngFirst), 'the same read, whatever the history').to.be.at.most(2 * GRANULE);
      const deep = await read(old, { occurredAt: toStoreTimestamp(new Date(Date.now() - 700 * DAY).toISOString()), id: uuid() });
      expect(deep, `a page two years deep: ${deep} rows read`).to.be.at.most(bound);
    });
  });

  describe('equal to the events table, walked through the API', () => {
    const DEVICES = [uuid(), uuid()];
    const FLEETS = [uuid(), uuid()];
    /** Instants over three years, the first drawn twice as often, so that many events share it and order within an instant is the engine's. */
    const DAYS_AGO = [0.5, 0.5, 3, 40, 41, 400, 800, 1000];

    type Spec = { day: number; device: number; fleet: number; domain: number; copyOf?: number | undefined; batch: number };
    const spec: fc.Arbitrary<Spec> = fc.record({
      day: fc.nat(DAYS_AGO.length - 1),
      device: fc.nat(2),
      fleet: fc.nat(1),
      domain: fc.nat(1),
      copyOf: fc.option(fc.nat(30), { nil: undefined, freq: 4 }),
      // Which of three writes brings it: a later write may bring older events (late arrivals) and copies of earlier ones.
      batch: fc.nat(2),
    });

    it('for random histories (late events, copies, a device moved between fleets), filters and page sizes: the same pages, cursors and has_more', async () => {
      let walked = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(spec, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 7 }), async (specs, limit) => {
          const tenant = gw.tenant();
          const now = Date.now();
          const made: CanonicalEvent[] = [];
          for (const s of specs) {
            const original = s.copyOf === undefined || made.length === 0 ? undefined : made[s.copyOf % made.length];
            made.push(
              original ??
                eventOf(tenant, DAYS_AGO[s.day]!, { device_id: s.device === 2 ? null : DEVICES[s.device]!, fleet_id: FLEETS[s.fleet]!, domain: ['telemetry', 'ota'][s.domain]! }, now),
            );
          }
          for (const batch of [0, 1, 2]) {
            const events = made.filter((_, k) => specs[k]!.batch === batch);
            if (events.length > 0) await gw.seed(events);
          }
          const scopes: [string, FeedFilters][] = [
            [`&device_id=${DEVICES[0]!}`, { deviceId: DEVICES[0]! }],
            [`&device_id=${DEVICES[0]!}&fleet_id=${FLEETS[1]!}`, { deviceId: DEVICES[0]!, fleetId: FLEETS[1]! }],
            [`&device_id=${DEVICES[1]!}&domain=ota`, { deviceId: DEVICES[1]!, domain: 'ota' }],
          ];
          for (const [query, filters] of scopes) {
            const expected = await expectedIds(sql, tenant, filters);
            // Twice: the second walk's pages start from the widths the first one's full pages needed.
            for (const round of ['first', 'again']) {
              const pages = await walk(tenant, query, limit);
              expect(pages.flatMap((p) => p.ids), `${query}, ${round}`).to.deep.equal(expected);
              for (const [k, page] of pages.entries()) {
                const last = k === pages.length - 1;
                expect(page.count).to.equal(page.ids.length);
                // Every page but the last is full and says more follows; the last says none does.
                expect({ full: page.count === limit || last, hasMore: page.hasMore, cursorNull: page.cursorNull }).to.deep.equal({ full: true, hasMore: !last, cursorNull: last });
              }
            }
            walked += 1;
          }
        }),
        { numRuns: 12 },
      );
      expect(walked).to.equal(36);
    });
  });
});
