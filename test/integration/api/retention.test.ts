import { expect } from 'chai';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { createClickHouseServerTransport } from '../../../src/store/clickhouse-server-transport.js';
import type { RetentionRun } from '../../../src/store/retention.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { openEventStream, type SseStream } from '../../support/sse-reader.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

/**
 * Months of 2003, which no other file writes: the shared gateways hold every file's tenants,
 * and a drop takes a month from all of them. The cutoff lies mid-February, so January goes
 * and February, not wholly past it, stays whole (docs/decisions/retention.md).
 */
const CUTOFF = new Date('2003-02-15T00:00:00Z');
const dayOf = (month: number, day: number) => new Date(Date.UTC(2003, month - 1, day, 12)).toISOString();

describeOnEachStore('retention: months past the cutoff dropped from every table', (gateway, store) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  const device = uuid();
  const events: CanonicalEvent[] = [];
  /** The live tail's position of a January event, taken before the drop. */
  let januaryPosition: string;
  /** Cursors issued before the drop whose next page lies in January: the feed's and a device page's. */
  let intoJanuary: { feed: string; device: string };
  /** The drop every test looks at, made once all the above were taken. */
  let run: RetentionRun;

  const tailOf = async (resumeAt?: string): Promise<SseStream> => {
    const res = await openEventStream(`${gw.baseUrl}/projects/${tenant.projectId}/events/stream`, { ...headers, ...(resumeAt === undefined ? {} : { 'last-event-id': resumeAt }) });
    expect(res.status).to.equal(200);
    return res.stream!;
  };
  const tailed = (stream: SseStream): CanonicalEvent[] => stream.messages.map((m) => JSON.parse(m.data) as CanonicalEvent);

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    // Ten days of each of January, February and March, every event of one device.
    for (const month of [1, 2, 3]) {
      for (let day = 10; day < 20; day++) events.push(canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, device_id: device, occurred_at: dayOf(month, day) }));
    }
    const stream = await tailOf();
    try {
      await gw.seed(events);
      await stream.until('every seeded event', (s) => s.messages.length >= events.length);
      const index = tailed(stream).findIndex((e) => e.occurred_at.startsWith('2003-01'));
      januaryPosition = stream.messages[index]!.id!;
    } finally {
      await stream.close();
    }
    intoJanuary = { feed: await cursorIntoJanuary(''), device: await cursorIntoJanuary(`&device_id=${device}`) };
    run = await gw.runtime.retention.dropBefore(CUTOFF);
  });

  const page = (query: string) => gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers });
  const months = (res: { body: CanonicalEventPageResponse }) => res.body.data.items.map((e) => e.occurred_at.slice(0, 7));

  /**
   * Every event of a traversal by cursor, `limit` a page, from `cursor` if given. A page may
   * come back empty with a cursor: a window of old, sparse history held nothing.
   */
  async function traverse(query: string, limit: number, from: string | null = null): Promise<string[]> {
    const ids: string[] = [];
    let cursor = from;
    do {
      const res: { status: number; body: CanonicalEventPageResponse } = await page(`?limit=${limit}${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      expect(res.status).to.equal(200);
      ids.push(...res.body.data.items.map((e) => e.id));
      cursor = res.body.meta.next_cursor;
    } while (cursor !== null);
    return ids;
  }

  /** A cursor whose next page lies in January: issued by the first page that ends there. */
  async function cursorIntoJanuary(query: string): Promise<string> {
    let cursor: string | null = null;
    for (;;) {
      const res: { body: CanonicalEventPageResponse } = await page(`?limit=5${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      cursor = res.body.meta.next_cursor;
      expect(cursor, 'the traversal ended before January').to.not.equal(null);
      if (months(res).at(-1) === '2003-01') return cursor!;
    }
  }

  it('drops January from events and the device table, keeps February and March, and pages and cursors read what is kept', async () => {
    for (const table of ['events', 'events_by_device']) expect(run.dropped).to.include(`${table}/200301`);
    expect(run.dropped.some((d) => d.endsWith('/200302'))).to.equal(false);
    expect(run.oldestKept!.getTime()).to.be.at.least(Date.UTC(2003, 1, 1));

    const kept = events.filter((e) => !e.occurred_at.startsWith('2003-01')).map((e) => e.id);
    // Whole traversals, of the project and of the device, at page sizes that end inside and at a month.
    for (const limit of [7, 10, 50]) {
      expect(await traverse('', limit), `feed, limit ${limit}`).to.have.members(kept).and.have.lengthOf(kept.length);
      expect(await traverse(`&device_id=${device}`, limit), `device, limit ${limit}`).to.have.members(kept).and.have.lengthOf(kept.length);
    }

    // A cursor into removed history: what is kept below it, which is nothing; no error, and the traversal ends.
    expect(await traverse('', 25, intoJanuary.feed)).to.deep.equal([]);
    expect(await traverse(`&device_id=${device}`, 25, intoJanuary.device)).to.deep.equal([]);

    // `since` older than retention: every event still kept.
    const since = encodeURIComponent('2002-06-01T00:00:00Z');
    expect(await traverse(`&since=${since}`, 50)).to.have.members(kept).and.have.lengthOf(kept.length);
    expect(await traverse(`&since=${since}&device_id=${device}`, 50)).to.have.members(kept).and.have.lengthOf(kept.length);

    // The gauge of the oldest event kept says what the run read.
    const scraped = parseMetrics((await request('GET', new URL('/metrics', gw.runtime.url).toString())).text);
    const [oldest] = samplesOf(scraped, 'events_oldest_kept_timestamp_seconds');
    expect(oldest?.value).to.equal(run.oldestKept!.getTime() / 1000);
  });

  it('leaves no row of a dropped month in the events tables, and a second run drops nothing', async function () {
    const again = await gw.runtime.retention.dropBefore(CUTOFF);
    expect(again.dropped).to.deep.equal([]);
    if (store !== 'clickhouse-server') {
      // chDB's directory belongs to the gateway's process; its feed and device pages above read both tables.
      return;
    }
    const transport = await createClickHouseServerTransport(gw.config.clickhouse!);
    try {
      for (const table of ['events', 'events_by_device']) {
        const [row] = await transport.query<{ old: number | string; kept: number | string }>(
          `SELECT countIf(occurred_at < toDateTime64('2003-02-01 00:00:00', 6, 'UTC')) AS old, countIf(org_id = {org:UUID}) AS kept FROM ${table}`,
          { org: tenant.orgId },
        );
        expect(Number(row!.old), table).to.equal(0);
        expect(Number(row!.kept), table).to.equal(20);
      }
    } finally {
      await transport.close();
    }
  });

  it('resumes a live tail from a dropped event\'s position, showing no dropped event and what comes after', async () => {
    const stream = await tailOf(januaryPosition);
    try {
      const late = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, device_id: device, occurred_at: dayOf(3, 25) });
      await gw.seed([late]);
      await stream.until('the event seeded after the drop', (s) => tailed(s).some((e) => e.id === late.id));
      expect(tailed(stream).filter((e) => e.occurred_at.startsWith('2003-01'))).to.deep.equal([]);
    } finally {
      await stream.close();
    }
  });
});
