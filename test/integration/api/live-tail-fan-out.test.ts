import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { decodeTailPosition } from '../../../src/feed/tail/tail-position.js';
import type { CanonicalEvent, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { openEventStream, type SseResponse, type SseStream } from '../../support/sse-reader.js';
import { storeEnvironment, skipUnlessServerStoreTested } from '../../support/stores.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clickhouseServer, describeOnEachStore, LIVE_TAIL_ENV } from './gateways.js';

const MAX_PER_ORG = Number(LIVE_TAIL_ENV.STREAM_MAX_PER_ORG);
const MAX_PER_CALLER = Number(LIVE_TAIL_ENV.STREAM_MAX_PER_CALLER);

const eventOf = (stream: SseStream, i: number) => JSON.parse(stream.messages[i]!.data) as CanonicalEvent;

/** One dashboard's tail across its sessions: what it asked for, and every message it got. */
interface LogicalTail {
  readonly tenant: Tenant & { readonly device: string; readonly caller: string };
  readonly query: string;
  readonly wants: (e: CanonicalEvent) => boolean;
  readonly sessions: SseStream[];
}

/** The events it got: the messages with no `event:` field (a gateway's closing message has one). */
const received = (t: LogicalTail) =>
  t.sessions.flatMap((s) => s.messages.flatMap((m, i) => (m.event === undefined ? [{ id: m.id!, event: eventOf(s, i) }] : [])));

/**
 * The shared read's fan-out on a real gateway, with many streams at once: every event to
 * every matching stream once, in order, with filters, across resumes and a restart.
 */
describeOnEachStore('live tail fan-out to many streams (extension beyond v1)', (gateway) => {
  let gw: TestGateway;
  const opened: SseStream[] = [];

  before(async () => {
    gw = await gateway();
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });

  async function open(tenant: Tenant, query: string, headers: Record<string, string>): Promise<SseResponse> {
    const res = await openEventStream(`${gw.baseUrl}/projects/${tenant.projectId}/events/stream${query}`, headers);
    if (res.stream !== undefined) opened.push(res.stream);
    return res;
  }

  async function session(t: LogicalTail, lastEventId?: string): Promise<void> {
    const headers = await t.tenant.headers({ sub: t.tenant.caller });
    // A stream the client just closed frees its slot once the gateway notices the connection went.
    const res = await waitFor('a slot', async () => {
      const answer = await open(t.tenant, t.query, lastEventId === undefined ? headers : { ...headers, 'last-event-id': lastEventId });
      return answer.status === 429 && (answer.body as ErrorEnvelope).message === 'Too many streams' ? undefined : answer;
    }, 10_000, 20);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    t.sessions.push(res.stream!);
  }

  const PROJECTS = 100;

  /** Opens sessions many at a time, as a dashboard's users arrive: the gateway takes them side by side. */
  async function sessions(tails: readonly LogicalTail[], resume: boolean): Promise<void> {
    for (let i = 0; i < tails.length; i += 50) {
      await Promise.all(tails.slice(i, i + 50).map((t) => session(t, resume ? received(t).at(-1)!.id : undefined)));
    }
  }

  it(`hands every event to ${PROJECTS * 3} streams over ${PROJECTS} projects by project and filters, once and in order, across resumes and a gateway restart`, async function () {
    this.timeout(300_000);
    const tails: LogicalTail[] = [];
    for (let i = 0; i < PROJECTS; i++) {
      const tenant = { ...gw.tenant(), device: uuid(), caller: `dashboard-${uuid()}` };
      tails.push(
        { tenant, query: '', wants: () => true, sessions: [] },
        { tenant, query: '?domain=devices', wants: (e) => e.domain === 'devices', sessions: [] },
        { tenant, query: `?device_id=${tenant.device.toUpperCase()}`, wants: (e) => e.device_id === tenant.device, sessions: [] },
      );
    }
    const seeded: CanonicalEvent[] = [];
    const expected = (t: LogicalTail) => seeded.filter((e) => e.org_id === t.tenant.orgId && e.project_id === t.tenant.projectId && t.wants(e));
    // One insert per round for every project, with another organization's events under the same project ids beside them.
    async function round(): Promise<void> {
      const tenants = [...new Set(tails.map((t) => t.tenant))];
      const events = tenants.flatMap((tenant) => [
        canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, domain: 'devices', device_id: tenant.device }),
        canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, domain: 'telemetry' }),
        canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, domain: 'devices', device_id: null }),
      ]);
      const noise = tenants.map((tenant) => canonicalEvent({ org_id: uuid(), project_id: tenant.projectId }));
      await gw.seed([...events, ...noise]);
      seeded.push(...events);
    }
    const caughtUp = (what: string) =>
      waitFor(what, async () => (tails.every((t) => received(t).length >= expected(t).length) ? true : undefined), 120_000, 100);

    await sessions(tails, false);
    await round();
    await caughtUp('every stream to have the first round');

    // Half the dashboards go away, miss a round, and come back with Last-Event-ID.
    const away = tails.slice(0, tails.length / 2);
    await Promise.all(away.map((t) => t.sessions.at(-1)!.close()));
    await round();
    await sessions(away, true);
    await round();
    await caughtUp('every stream to have three rounds');

    // A restart ends every stream with a closing message; each comes back where it was.
    await gw.restart();
    for (const t of tails) {
      const last = t.sessions.at(-1)!;
      await last.until('the end of the stream', (s) => s.ended);
      expect(last.messages.at(-1)!.event, 'a closing message last').to.equal('closing');
      expect(JSON.parse(last.messages.at(-1)!.data)).to.include({ ok: 0, message: 'Shutting down' });
    }
    await round();
    await sessions(tails, true);
    await round();
    await caughtUp('every stream to have five rounds');

    // A sentinel per project, seeded last: once it is in, anything else would have come before it.
    const sentinels = tails.filter((t) => t.query === '').map((t) => canonicalEvent({ org_id: t.tenant.orgId, project_id: t.tenant.projectId, domain: 'devices', device_id: t.tenant.device }));
    await gw.seed(sentinels);
    seeded.push(...sentinels);
    await caughtUp('every stream to have its sentinel');

    const unfiltered = new Map(tails.filter((t) => t.query === '').map((t) => [t.tenant, received(t).map((m) => m.event.id)]));
    for (const t of tails) {
      const got = received(t);
      const ids = got.map((m) => m.event.id);
      expect(new Set(ids).size, `${t.query}: none twice`).to.equal(ids.length);
      expect([...ids].sort(), `${t.query}: exactly its events`).to.deep.equal(expected(t).map((e) => e.id).sort());
      // Rounds in the order they were seeded, and within a round the order the unfiltered stream of the project saw.
      const order = unfiltered.get(t.tenant)!;
      expect(ids, `${t.query}: ingestion order`).to.deep.equal(order.filter((id) => ids.includes(id)));
      const instants = got.map((m) => decodeTailPosition(m.id)!.ingestedAt);
      expect(instants).to.deep.equal([...instants].sort());
    }
  });

  it(`refuses a caller's stream past ${MAX_PER_CALLER} on this gateway, whichever organizations it names, with 429 and Retry-After`, async () => {
    const caller = `one-caller-${uuid()}`;
    const tenants = Array.from({ length: MAX_PER_CALLER + 1 }, () => gw.tenant());
    for (const tenant of tenants.slice(0, MAX_PER_CALLER)) {
      expect((await open(tenant, '', await tenant.headers({ sub: caller }))).status).to.equal(200);
    }
    const last = tenants.at(-1)!;
    const refused = await open(last, '', await last.headers({ sub: caller }));
    expect(refused.status).to.equal(429);
    expect(refused.headers.get('retry-after')).to.equal('5');
    expect(refused.body).to.include({ ok: 0, message: 'Too many streams' });
    expect((refused.body as ErrorEnvelope).detail).to.match(/caller already has/);
    // Another caller of the same organization is not held to the first one's share.
    expect((await open(last, '', await last.headers({ sub: `other-${uuid()}` }))).status).to.equal(200);
    expect(MAX_PER_CALLER).to.be.above(MAX_PER_ORG);
  });

  it('closes a stream whose client stops reading once its queue passes the bound, with a closing message, while another client of the project gets every event', async function () {
    this.timeout(120_000);
    const tenant = gw.tenant();
    const fast = await open(tenant, '', await tenant.headers());
    expect(fast.status).to.equal(200);
    const slow = await stalledStream(new URL(gw.baseUrl), `/core/api/v1/projects/${tenant.projectId}/events/stream`, await tenant.headers());
    try {
      // Rows of a few hundred kilobytes per insert, until the gateway gives up on the stalled client;
      // the kernel's socket buffers take some megabytes first, so how many inserts that needs varies.
      const slowClosed = async () => samplesOf(parseMetrics((await request('GET', new URL('/metrics', gw.baseUrl).toString())).text), 'live_tail_slow_closed_total', {}).reduce((n, s) => n + s.value, 0);
      const closedBefore = await slowClosed();
      const seeded: CanonicalEvent[] = [];
      await waitFor('the stalled stream to be closed', async () => {
        const batch = Array.from({ length: 20 }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, payload: { blob: 'x'.repeat(16_000) } }));
        await gw.seed(batch);
        seeded.push(...batch);
        return (await slowClosed()) > closedBefore ? true : undefined;
      }, 90_000, 50);
      // The stalled client reads at last (within the grace a closed stream gets to hand over its last bytes):
      // a prefix of the events, then the closing message, then the end.
      const text = await slow.readToEnd();
      await fast.stream!.until('every event', (s) => s.messages.length >= seeded.length, 60_000);
      expect(new Set(fast.stream!.messages.map((m) => (JSON.parse(m.data) as CanonicalEvent).id))).to.deep.equal(new Set(seeded.map((e) => e.id)));

      const blocks = text.split('\n\n').filter((b) => b.trim() !== '');
      const last = blocks.at(-1)!;
      expect(last.split('\n')[0]).to.equal('event: closing');
      const envelope = JSON.parse(last.split('\n')[1]!.slice('data: '.length)) as ErrorEnvelope;
      expect(envelope).to.include({ ok: 0, message: 'Client too slow' });
      expect(envelope.detail).to.match(/Last-Event-ID/);
      const ids = blocks.filter((b) => b.startsWith('id: ')).map((b) => b.split('\n')[0]!.slice(4));
      expect(ids.length).to.be.above(0);
      expect(ids).to.deep.equal(fast.stream!.messages.slice(0, ids.length).map((m) => m.id));
      // Resuming from the last one it got sends the rest.
      const resumed = await open(tenant, '', { ...(await tenant.headers()), 'last-event-id': ids.at(-1)! });
      await resumed.stream!.until('the rest', (s) => s.messages.length >= seeded.length - ids.length, 60_000);
      expect(resumed.stream!.messages.map((m) => m.id)).to.deep.equal(fast.stream!.messages.slice(ids.length).map((m) => m.id));
    } finally {
      slow.socket.destroy();
    }
  });
});

/** An HTTP/1.0 request for a stream whose client reads the answer's head and then nothing, until told to. */
async function stalledStream(base: URL, path: string, headers: Record<string, string>): Promise<{ socket: Socket; readToEnd(): Promise<string> }> {
  const socket = connect(Number(base.port), base.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  // HTTP/1.0: the body is the bytes until the server closes, with no chunk framing to undo.
  socket.write(`GET ${path} HTTP/1.0\r\nHost: ${base.host}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
  const chunks: Buffer[] = [];
  let ended = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('end', () => {
    ended = true;
  });
  await waitFor('the answer head', async () => (Buffer.concat(chunks).includes('\r\n\r\n') ? true : undefined), 10_000, 10);
  expect(Buffer.concat(chunks).toString().split('\r\n')[0]).to.match(/ 200 /);
  socket.pause();
  return {
    socket,
    async readToEnd() {
      socket.resume();
      await waitFor('the end of the stalled stream', async () => (ended ? true : undefined), 60_000, 20);
      const text = Buffer.concat(chunks).toString();
      return text.slice(text.indexOf('\r\n\r\n') + 4);
    },
  };
}

describe('opening a live tail spends the organization\'s rate-limit tokens [clickhouse-server]', function () {
  this.timeout(120_000);
  let gw: TestGateway | undefined;
  const opened: SseStream[] = [];

  before(async function () {
    skipUnlessServerStoreTested(this);
    gw = await startTestGateway({ ...storeEnvironment('clickhouse-server', (await clickhouseServer()).url), ...LIVE_TAIL_ENV, RATE_LIMIT_PER_ORG: '1', RATE_LIMIT_BURST: '3' });
  });

  after(async () => {
    await Promise.all(opened.map((s) => s.close()));
    await gw?.close();
  });

  it('answers 429 with Retry-After in the envelope once the burst is spent on openings alone', async () => {
    const tenant = gw!.tenant();
    const headers = await tenant.headers({ sub: `rate-${uuid()}` });
    const url = `${gw!.baseUrl}/projects/${tenant.projectId}/events/stream`;
    const refused = await waitFor('an opening refused by the rate limit', async () => {
      const answers = await Promise.all(Array.from({ length: 3 }, () => openEventStream(url, headers)));
      for (const a of answers) if (a.stream !== undefined) opened.push(a.stream);
      // Close what opened at once: only the rate limit may refuse here, not the stream caps.
      await Promise.all(answers.flatMap((a) => (a.stream === undefined ? [] : [a.stream.close()])));
      // A 429 of the stream caps (a closed stream's slot frees a moment later) is not what this waits for.
      return answers.find((a) => a.status === 429 && (a.body as ErrorEnvelope).message === 'Too many requests');
    }, 30_000, 0);
    expect(refused.body).to.include({ ok: 0 });
    expect((refused.body as ErrorEnvelope).detail).to.match(/rate limit/);
    expect(refused.headers.get('retry-after')).to.match(/^[1-9]\d*$/);
  });
});
