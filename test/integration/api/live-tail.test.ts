import { expect } from 'chai';
import type { CanonicalEvent, CanonicalEventPageResponse, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { TAIL_BATCH_ROWS } from '../../../src/feed/tail/live-tail.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { tailWindowSql } from '../../../src/store/clickhouse-tail.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { openEventStream, type SseResponse, type SseStream } from '../../support/sse-reader.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore, LIVE_TAIL_ENV } from './gateways.js';

const TOKEN = /^[A-Za-z0-9_-]{34}$/;
const MAX_PER_ORG = Number(LIVE_TAIL_ENV.STREAM_MAX_PER_ORG);

const eventsOf = (stream: SseStream): CanonicalEvent[] => stream.messages.map((m) => JSON.parse(m.data) as CanonicalEvent);
const idsOf = (stream: SseStream): string[] => eventsOf(stream).map((e) => e.id);
const has = (...ids: string[]) => (stream: SseStream) => ids.every((id) => idsOf(stream).includes(id));

/**
 * The live tail on a real gateway. "Nothing else arrived" is checked without sleeping:
 * the stream sends in ingestion order, so once an event seeded later (a sentinel) has
 * arrived, anything seeded before it that was going to arrive has arrived too.
 */
describeOnEachStore('live tail of a project as Server-Sent Events (extension beyond v1)', (gateway) => {
  let gw: TestGateway;
  let sql: SqlTransport;
  const opened: SseStream[] = [];

  before(async () => {
    gw = await gateway();
    // A second connection to the gateway's store, to keep redelivered copies apart (chDB allows one per directory within a process).
    sql = await openStore(gw.config);
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });

  after(async () => {
    await sql.command('SYSTEM START MERGES events');
    await sql.close();
  });

  async function connect(tenant: Tenant, query = '', headers: Record<string, string> = {}): Promise<SseResponse> {
    const res = await openEventStream(`${gw.baseUrl}/projects/${tenant.projectId}/events/stream${query}`, { ...(await tenant.headers()), ...headers });
    if (res.stream !== undefined) opened.push(res.stream);
    return res;
  }

  async function tail(tenant: Tenant, query = '', headers: Record<string, string> = {}): Promise<SseStream> {
    const res = await connect(tenant, query, headers);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.stream!;
  }

  const eventOf = (tenant: Tenant, overrides: Partial<CanonicalEvent> = {}) => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, ...overrides });

  it('sends the events ingested after it connected, each as an id and one line of the feed\'s JSON, after a retry line', async () => {
    const tenant = gw.tenant();
    const res = await connect(tenant);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/event-stream');
    expect(res.headers.get('cache-control')).to.equal('no-cache');
    expect(res.headers.get('x-accel-buffering')).to.equal('no');
    const stream = res.stream!;

    const seeded = [eventOf(tenant), eventOf(tenant, { payload: { note: 'two\nlines' } }), eventOf(tenant, { device_id: null, payload: null })];
    await gw.seed(seeded);
    await stream.until('the three events', has(...seeded.map((e) => e.id)));

    expect(stream.retry).to.equal(2000);
    expect(stream.retryFirst, 'retry: comes before any event').to.equal(true);
    expect(stream.messages).to.have.length(3);
    for (const message of stream.messages) {
      expect(message.id).to.match(TOKEN);
      expect(message.event, 'no event: field, so onmessage receives it').to.equal(undefined);
    }
    expect(new Set(stream.messages.map((m) => m.id)).size).to.equal(3);
    // Each message is exactly the feed's item for that event.
    const feed = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events`, { headers: await tenant.headers() });
    const byId = new Map(feed.body.data.items.map((e) => [e.id, e]));
    for (const event of eventsOf(stream)) expect(event).to.deep.equal(byId.get(event.id));
  });

  it('does not send what was ingested before it connected', async () => {
    const tenant = gw.tenant();
    const old = eventOf(tenant);
    await gw.seed([old]);
    // Past the settle window, so the old event is plainly behind the stream's start.
    await waitFor('the old event to settle', async () => ((await sql.query<{ ok: number }>("SELECT 1 AS ok FROM events WHERE id = {id:UUID} AND ingested_at < now64(3) - toIntervalMillisecond({settle:UInt32})", { id: old.id, settle: Number(LIVE_TAIL_ENV.STREAM_SETTLE_MS) * 2 })).length > 0 ? true : undefined));
    const stream = await tail(tenant);
    const fresh = eventOf(tenant);
    await gw.seed([fresh]);
    await stream.until('the new event', has(fresh.id));
    expect(idsOf(stream)).to.deep.equal([fresh.id]);
  });

  it('applies every filter of the feed', async () => {
    const tenant = gw.tenant();
    const wanted = { domain: 'devices', entity: 'enrollment', action: 'queued', device_id: uuid(), fleet_id: uuid() };
    const query = `?domain=devices&entity=enrollment&action=queued&device_id=${wanted.device_id}&fleet_id=${wanted.fleet_id.toUpperCase()}`;
    const stream = await tail(tenant, query);
    const misses = [
      eventOf(tenant, { ...wanted, domain: 'edge' }),
      eventOf(tenant, { ...wanted, entity: 'device' }),
      eventOf(tenant, { ...wanted, action: 'done' }),
      eventOf(tenant, { ...wanted, device_id: uuid() }),
      eventOf(tenant, { ...wanted, fleet_id: null }),
    ];
    const match = eventOf(tenant, wanted);
    await gw.seed(misses);
    await gw.seed([match]);
    await stream.until('the matching event', has(match.id));
    expect(idsOf(stream)).to.deep.equal([match.id]);
  });

  it("never sends another organization's events, not even for a project of the same id", async () => {
    const tenant = gw.tenant();
    const other = gw.tenant();
    const stream = await tail(tenant);
    await gw.seed([
      canonicalEvent({ org_id: other.orgId, project_id: tenant.projectId }),
      canonicalEvent({ org_id: tenant.orgId, project_id: uuid() }),
    ]);
    const own = eventOf(tenant);
    await gw.seed([own]);
    await stream.until('its own event', has(own.id));
    expect(idsOf(stream)).to.deep.equal([own.id]);
  });

  it('resumes after Last-Event-ID with exactly the events it missed, none twice', async () => {
    const tenant = gw.tenant();
    const first = await tail(tenant);
    const before = [eventOf(tenant), eventOf(tenant), eventOf(tenant)];
    for (const event of before) await gw.seed([event]);
    await first.until('the first three events', has(...before.map((e) => e.id)));
    const lastId = first.messages.at(-1)!.id!;
    await first.close();

    const missed = [eventOf(tenant), eventOf(tenant), eventOf(tenant), eventOf(tenant)];
    for (const event of missed) await gw.seed([event]);
    const resumed = await tail(tenant, '', { 'last-event-id': lastId });
    await resumed.until('the missed events', has(...missed.map((e) => e.id)));
    const sentinel = eventOf(tenant);
    await gw.seed([sentinel]);
    await resumed.until('an event seeded after resuming', has(sentinel.id));
    expect(idsOf(resumed)).to.deep.equal([...missed, sentinel].map((e) => e.id));
  });

  it(`catches up on more than one poll's ${TAIL_BATCH_ROWS} rows, ${TAIL_BATCH_ROWS + 200} of them stored by one insert`, async () => {
    const tenant = gw.tenant();
    const first = await tail(tenant);
    const mark = eventOf(tenant);
    await gw.seed([mark]);
    await first.until('the mark', has(mark.id));
    await first.close();
    // Rows of one insert share their ingested_at (on chDB always), so the position's id tie-break carries the paging.
    const bulk = Array.from({ length: TAIL_BATCH_ROWS + 200 }, () => eventOf(tenant));
    const more = Array.from({ length: TAIL_BATCH_ROWS }, () => eventOf(tenant));
    await gw.seed(bulk);
    await gw.seed(more);
    const resumed = await tail(tenant, '', { 'last-event-id': first.messages[0]!.id! });
    await resumed.until('every missed event', (s) => s.messages.length >= bulk.length + more.length);
    const ids = idsOf(resumed);
    expect(new Set(ids).size, 'none twice').to.equal(ids.length);
    expect(new Set(ids)).to.deep.equal(new Set([...bulk, ...more].map((e) => e.id)));
    // Ingestion order: the whole first insert before any of the second.
    const second = new Set(more.map((e) => e.id));
    expect(ids.slice(0, bulk.length).some((id) => second.has(id))).to.equal(false);
  });

  it('reads a poll through the project\'s key range and the ingestion-time skip index', async () => {
    const tenant = gw.tenant();
    const { sql: query, params } = tailWindowSql({
      orgId: tenant.orgId,
      projectId: tenant.projectId,
      filters: { domain: 'telemetry' },
      after: { ingestedAt: '2026-01-01 00:00:00.000', id: uuid() },
      before: '2026-01-01 00:00:02.000',
      limit: TAIL_BATCH_ROWS,
    });
    const plan = (await sql.query<{ explain: string }>(`EXPLAIN indexes = 1 ${query}`, params)).map((r) => r.explain).join('\n');
    expect(plan.slice(plan.indexOf('PrimaryKey'))).to.match(/project_id in \[/);
    expect(plan).to.match(/Name: ingested_idx/);
  });

  it('sends late telemetry: an event that occurred an hour before it was ingested', async () => {
    const tenant = gw.tenant();
    const stream = await tail(tenant);
    const late = eventOf(tenant, { occurred_at: new Date(Date.now() - 3_600_000).toISOString() });
    await gw.seed([late]);
    await stream.until('the late event', has(late.id));
    expect(eventsOf(stream)[0]!.occurred_at.slice(0, 23)).to.equal(late.occurred_at.slice(0, 23));
  });

  it('sends a redelivered event once, whether it was sent before the copy came or the client resumed before both', async () => {
    const tenant = gw.tenant();
    // With merges stopped both copies stay stored, so the tail itself must fold them.
    await sql.command('SYSTEM STOP MERGES events');
    const stream = await tail(tenant);
    const earlier = eventOf(tenant);
    const event = eventOf(tenant);
    await gw.seed([earlier]);
    await gw.seed([event]);
    await stream.until('the event', has(event.id));
    await gw.seed([event]);
    const sentinel = eventOf(tenant);
    await gw.seed([sentinel]);
    await stream.until('an event seeded after the copy', has(sentinel.id));
    const [row] = await sql.query<{ n: string }>('SELECT count() AS n FROM events WHERE id = {id:UUID}', { id: event.id });
    expect(Number(row!.n), 'both copies are stored').to.equal(2);
    expect(idsOf(stream)).to.deep.equal([earlier.id, event.id, sentinel.id]);

    const resumed = await tail(tenant, '', { 'last-event-id': stream.messages[0]!.id! });
    await resumed.until('the sentinel again', has(sentinel.id));
    expect(idsOf(resumed)).to.deep.equal([event.id, sentinel.id]);
    await sql.command('SYSTEM START MERGES events');
  });

  it('sends one id at two instants as two events, even when one insert carries both', async () => {
    const tenant = gw.tenant();
    const stream = await tail(tenant);
    const first = eventOf(tenant, { occurred_at: '2026-06-01T00:00:00Z' });
    const sameIdLater = { ...first, occurred_at: '2026-06-01T00:00:01Z', action: 'updated' };
    await gw.seed([first, sameIdLater]);
    await stream.until('both events', (s) => s.messages.length >= 2);
    expect(eventsOf(stream).map((e) => [e.id, e.action])).to.have.deep.members([
      [first.id, first.action],
      [first.id, 'updated'],
    ]);
  });

  it('keeps an idle stream alive with heartbeat comments', async () => {
    const stream = await tail(gw.tenant());
    await stream.until('two heartbeats', (s) => s.comments.filter((c) => c === 'heartbeat').length >= 2);
    expect(stream.messages).to.deep.equal([]);
  });

  it(`refuses a stream past ${MAX_PER_ORG} per organization with 429 and Retry-After, and takes one again once a stream closed`, async () => {
    const tenant = gw.tenant();
    const streams = [];
    for (let i = 0; i < MAX_PER_ORG; i++) streams.push(await tail(tenant));
    const refused = await connect(tenant);
    expect(refused.status).to.equal(429);
    expect(refused.headers.get('retry-after')).to.equal('5');
    expect(refused.body).to.include({ ok: 0, message: 'Too many streams' });
    expect((refused.body as ErrorEnvelope).detail).to.be.a('string');

    // Another organization has slots of its own.
    await tail(gw.tenant());

    await streams[0]!.close();
    const again = await waitFor('a slot to free', async () => {
      const res = await connect(tenant);
      return res.status === 200 ? res : undefined;
    });
    expect(again.stream).to.not.equal(undefined);
  });

  it('refuses a malformed Last-Event-ID, the paging parameters and bad filters with 400, naming each', async () => {
    const tenant = gw.tenant();
    const good = await tail(tenant);
    const event = eventOf(tenant);
    await gw.seed([event]);
    await good.until('an event', has(event.id));
    const token = good.messages[0]!.id!;
    const farFuture = Buffer.concat([Buffer.from([1]), Buffer.alloc(8, 0x7f), Buffer.alloc(16)]).toString('base64url');
    for (const junk of ['x', token.slice(1), `${token}A`, `${token.slice(0, -1)}!`, `B${token.slice(1)}`, 'A'.repeat(34), '_'.repeat(34), farFuture]) {
      const res = await connect(tenant, '', { 'last-event-id': junk });
      expect(res.status, junk).to.equal(400);
      expect(res.body, junk).to.deep.equal({
        ok: 0,
        message: { 'header.Last-Event-ID': 'is not an event id sent by this stream' },
        detail: 'header.Last-Event-ID is not an event id sent by this stream',
      });
    }
    const paging = await connect(tenant, '?cursor=abc&limit=5&since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:00Z&device_id=nope');
    expect(paging.status).to.equal(400);
    expect(Object.keys((paging.body as ErrorEnvelope).message as object).sort()).to.deep.equal(
      ['query.cursor', 'query.device_id', 'query.limit', 'query.since', 'query.until'],
    );
    expect((await openEventStream(`${gw.baseUrl}/projects/not-a-uuid/events/stream`, await tenant.headers())).status).to.equal(400);
  });

  it('counts stream openings in the request metrics by route and status', async () => {
    const route = '/core/api/v1/projects/:project_id/events/stream';
    const count = async (status: string) => {
      const text = (await request('GET', new URL('/metrics', gw.baseUrl).toString())).text;
      return samplesOf(parseMetrics(text), 'http_request_duration_seconds_count', { route, status }).reduce((sum, s) => sum + s.value, 0);
    };
    const [opened200, refused400] = [await count('200'), await count('400')];
    const tenant = gw.tenant();
    await tail(tenant);
    await connect(tenant, '?limit=1');
    // Recorded when the stream opens, not when it ends: the stream above is still open.
    expect(await count('200')).to.equal(opened200 + 1);
    expect(await count('400')).to.equal(refused400 + 1);
  });

  it('asks for the same credentials as the feed', async () => {
    const tenant = gw.tenant();
    const url = `${gw.baseUrl}/projects/${tenant.projectId}/events/stream`;
    expect((await openEventStream(url, {})).status).to.equal(401);
    expect((await openEventStream(url, await tenant.headers({ scopes: ['devices:enroll'] }))).status).to.equal(403);
    expect((await openEventStream(url, await tenant.headers({ orgHeader: uuid() }))).status).to.equal(403);
  });

  // Last: it restarts the shared gateway.
  it('ends open streams as soon as the gateway closes, so they do not hold the close up', async () => {
    const tenant = gw.tenant();
    const stream = await tail(tenant);
    const started = Date.now();
    let endedAfterMs = Number.NaN;
    const ended = stream.until('the end of the stream', (s) => s.ended).then(() => {
      endedAfterMs = Date.now() - started;
    });
    let closedAfterMs = Number.NaN;
    await gw.restart(async () => {
      closedAfterMs = Date.now() - started;
    });
    await ended;
    // Left open, a stream would last until the drain cuts it at SHUTDOWN_GRACE_MS (10 s).
    expect(endedAfterMs, 'the stream ended').to.be.below(1000);
    expect(gw.config.shutdownGraceMs).to.equal(10_000);
    // The close as a whole may still wait a few seconds for connections the client opened and never used
    // (fetch opens a spare one after an aborted stream), which only the grace cuts or the client closes.
    expect(closedAfterMs, 'the gateway closed').to.be.below(gw.config.shutdownGraceMs);
  });
});
