import { connect } from 'node:net';
import { expect } from 'chai';
import type { ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { hs256Token, uuid } from '../../support/factories.js';
import type { HttpResponse } from '../../support/http-client.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { rawConnection, rawExchange, rawRequestBytes, type RawOutcome } from '../../support/raw-http.js';
import { storeEnvironment, skipUnlessServerStoreTested } from '../../support/stores.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clickhouseServer, describeOnEachStore } from './gateways.js';

/**
 * Every limit of docs/decisions/requests-and-errors.md, each at its edge: just under is
 * taken, just over is refused in the envelope.
 */
const schemas = createSchemaRegistry();

function expectEnvelope(status: number, body: unknown, expected: number): void {
  expect(status, JSON.stringify(body)).to.equal(expected);
  expect(schemas.check('error-envelope.schema.json', body).ok, JSON.stringify(body)).to.equal(true);
}

function expectRawEnvelope(outcome: RawOutcome, expected: number): { afterMs: number; body: unknown } {
  if (outcome.kind !== 'response') throw new Error(`expected a ${expected}, got ${JSON.stringify(outcome)}`);
  const body: unknown = JSON.parse(outcome.response.body);
  expectEnvelope(outcome.response.status, body, expected);
  return { afterMs: outcome.afterMs, body };
}

/** Objects inside objects, `depth` of them: {"a":{"a":{}}} is 3. */
const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;

describeOnEachStore('request limits', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
  });

  const enrollPath = () => `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`;
  const policyPath = () => `/projects/${tenant.projectId}/fleets/${uuid()}/edge/policy`;
  const json = { 'content-type': 'application/json' };
  const send = (method: string, path: string, body: string) => gw.call<ErrorEnvelope>(method, path, { headers: { ...headers, ...json }, body });

  describe('body size: 64 KiB', () => {
    it('takes a body of 64 KiB and answers 413 in the envelope above it', async () => {
      const fill = (size: number) => `{"meta":{"x":"${'a'.repeat(size - 17)}"}}`;
      expect(fill(64 * 1024)).to.have.length(64 * 1024);
      expect((await send('POST', enrollPath(), fill(64 * 1024))).status).to.equal(202);
      const over = await send('POST', enrollPath(), fill(64 * 1024 + 1));
      expectEnvelope(over.status, over.body, 413);
      const patch = await send('PATCH', policyPath(), `{"a":"${'a'.repeat(70_000)}"}`);
      expectEnvelope(patch.status, patch.body, 413);
    });

    // Found by the fuzz suite: the body reader cut Content-Length to 32 bits, so 4294967297
    // read as 1 and the request waited for the rest of four gigabytes instead of a 413.
    it('answers a declared length over the limit at once, before any body arrives, however large', async () => {
      for (const length of ['65537', '4294967297', '9007199254740993']) {
        const bytes = rawRequestBytes('PATCH', `${API_PREFIX}${policyPath()}`, [
          ['Authorization', headers['authorization']!],
          ['ORG-ID', tenant.orgId],
          ['Content-Type', 'application/json'],
          ['Content-Length', length],
        ]);
        expectRawEnvelope(await rawExchange(new URL(gw.baseUrl), bytes, { waitMs: 5000 }), 413);
      }
    });
  });

  describe('header size: 16 KiB', () => {
    it('answers headers over 16 KiB with 431 in the envelope', async () => {
      const under = await gw.call<ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events`, { headers: { ...headers, 'x-padding': 'p'.repeat(14_000) } });
      expect(under.status).to.equal(200);
      const over = await gw.call<ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events`, { headers: { ...headers, 'x-padding': 'p'.repeat(17_000) } });
      expectEnvelope(over.status, over.body, 431);
    });
  });

  describe('JSON nesting: 31 levels for a command body, whose message nests one more', () => {
    it('takes a body nested 31 deep and refuses 32 with a 400 naming the body', async () => {
      expect((await send('PATCH', policyPath(), nested(31))).status).to.equal(200);
      const over = await send('PATCH', policyPath(), nested(32));
      expectEnvelope(over.status, over.body, 400);
      expect(over.body.message).to.deep.equal({ body: 'must not nest arrays and objects deeper than 31 levels' });
    });

    // Found by the fuzz suite: a 64 KiB body nests 30,000 levels, and walking it (for Kafka, for
    // the idempotency fingerprint) overflowed the stack: a 500. It must never become a value.
    it('refuses 30,000 levels of arrays or objects with the same 400, on either command', async () => {
      const deepArrays = `{"meta":${'['.repeat(30_000)}${']'.repeat(30_000)}}`;
      for (const [method, path, body] of [
        ['POST', enrollPath(), `{"meta":${nested(9000)}}`],
        ['POST', enrollPath(), deepArrays],
        ['PATCH', policyPath(), deepArrays],
      ] as const) {
        const res = await gw.call<ErrorEnvelope>(method, path, { headers: { ...headers, ...json, 'idempotency-key': uuid() }, body });
        expectEnvelope(res.status, res.body, 400);
        expect(res.body.message).to.have.key('body');
      }
    });
  });

  describe('enrollment strings', () => {
    it('takes display_name and external_id of 256 and enrollment_type of 64 characters, and refuses one more', async () => {
      const fits = { display_name: 'd'.repeat(256), external_id: 'e'.repeat(256), enrollment_type: 't'.repeat(64) };
      expect((await gw.call('POST', enrollPath(), { headers, body: fits })).status).to.equal(202);
      const over = await gw.call<ErrorEnvelope>('POST', enrollPath(), {
        headers,
        body: { display_name: 'd'.repeat(257), external_id: 'e'.repeat(257), enrollment_type: 't'.repeat(65) },
      });
      expectEnvelope(over.status, over.body, 400);
      expect(over.body.message).to.have.keys('body.display_name', 'body.external_id', 'body.enrollment_type');
    });
  });

  describe('edge policy patch', () => {
    const patch = (body: unknown) => gw.call<ErrorEnvelope>('PATCH', policyPath(), { headers, body });

    it('takes names of 128 and strings of 4096 characters at any depth, and refuses one more', async () => {
      const fits = { ['n'.repeat(128)]: { deep: ['s'.repeat(4096)], ['m'.repeat(128)]: 's'.repeat(4096) } };
      expect((await patch(fits)).status).to.equal(200);
      const over = await patch({ ['n'.repeat(129)]: 1, a: { b: ['s'.repeat(4097)] }, c: { ['m'.repeat(129)]: null } });
      expectEnvelope(over.status, over.body, 400);
      expect(over.body.message).to.have.keys(`body.${'n'.repeat(40)}…`, 'body.a.b.0', `body.c.${'m'.repeat(40)}…`);
    });

    it('takes 256 members per object and 1024 items per array, and refuses one more', async () => {
      const members = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
      expect((await patch({ ...members(256) })).status).to.equal(200);
      expect((await patch({ a: members(256), b: Array(1024).fill(0) })).status).to.equal(200);
      const over = await patch({ a: members(257), b: Array(1025).fill(0) });
      expectEnvelope(over.status, over.body, 400);
      expect(over.body.message).to.have.keys('body.a', 'body.b');
      const top = await patch(members(257));
      expectEnvelope(top.status, top.body, 400);
    });
  });

  describe('rate limit', () => {
    it('is off unless configured: a burst of requests from one organization is all served', async () => {
      const answers = await Promise.all(Array.from({ length: 40 }, () => gw.call('GET', `/projects/${tenant.projectId}/events?limit=1`, { headers })));
      expect(answers.map((a) => a.status)).to.deep.equal(Array(40).fill(200));
    });
  });
});

/** A gateway of the suite's own on the ClickHouse server: chDB binds one data directory per process, and the shared chDB gateway holds it. */
function ownGateway(title: string, extraEnv: Record<string, string>, body: (gw: () => TestGateway) => void): void {
  describe(`${title} [clickhouse-server]`, function () {
    this.timeout(120_000);
    let gw: TestGateway | undefined;
    before(async function () {
      skipUnlessServerStoreTested(this);
      gw = await startTestGateway({ ...storeEnvironment('clickhouse-server', (await clickhouseServer()).url), ...extraEnv });
    });
    after(() => gw?.close());
    body(() => gw!);
  });
}

// Small bounds, so the test takes seconds; the margins are generous because a loaded machine is slow to close, never early.
const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;
const KEEP_ALIVE_TIMEOUT_MS = 1000;
// Node looks for expired connections on a beat (a quarter of the headers timeout here), and a busy event loop runs late.
const LATE_MARGIN_MS = 5000;
// The server starts its clock at the first byte, the client a moment before it writes one.
const EARLY_SLACK_MS = 100;

ownGateway(
  'HTTP server time limits',
  {
    HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
  },
  (gateway) => {
    /** Writes `bytes` one at a time, `everyMs` apart, until they run out or the server answers. */
    async function trickle(bytes: Buffer, everyMs: number, boundMs: number): Promise<RawOutcome> {
      const { socket, outcome } = await rawConnection(new URL(gateway().baseUrl), { waitMs: boundMs + LATE_MARGIN_MS });
      let sent = 0;
      const timer = setInterval(() => {
        if (sent < bytes.length && !socket.destroyed) socket.write(bytes.subarray(sent, ++sent));
      }, everyMs);
      try {
        return await outcome;
      } finally {
        clearInterval(timer);
      }
    }

    it('answers 408 in the envelope to a client whose headers trickle in past HTTP_HEADERS_TIMEOUT_MS, and not before', async () => {
      const head = Buffer.from(`GET ${API_PREFIX}/projects/${uuid()}/events HTTP/1.1\r\nHost: x\r\nX-Slow: ${'s'.repeat(500)}`);
      const { afterMs } = expectRawEnvelope(await trickle(head, 20, HEADERS_TIMEOUT_MS), 408);
      expect(afterMs).to.be.at.least(HEADERS_TIMEOUT_MS - EARLY_SLACK_MS);
      expect(afterMs).to.be.below(HEADERS_TIMEOUT_MS + LATE_MARGIN_MS);
    });

    it('answers 408 in the envelope to a client whose body trickles in past HTTP_REQUEST_TIMEOUT_MS, and not before', async () => {
      const gw = gateway();
      const tenant = gw.tenant();
      const h = await tenant.headers();
      const head = rawRequestBytes('PATCH', `${API_PREFIX}/projects/${tenant.projectId}/fleets/${uuid()}/edge/policy`, [
        ['Authorization', h['authorization']!],
        ['ORG-ID', tenant.orgId],
        ['Content-Type', 'application/json'],
        ['Content-Length', '200'],
      ]);
      // The headers at once, then a byte of body every 50 ms: 10 s for the whole, far past the bound.
      const { socket, outcome } = await rawConnection(new URL(gw.baseUrl), { waitMs: REQUEST_TIMEOUT_MS + LATE_MARGIN_MS });
      socket.write(head);
      const body = Buffer.from(`{"a":"${'x'.repeat(192)}"}`);
      let sent = 0;
      const timer = setInterval(() => {
        if (sent < body.length && !socket.destroyed) socket.write(body.subarray(sent, ++sent));
      }, 50);
      try {
        const { afterMs } = expectRawEnvelope(await outcome, 408);
        expect(afterMs).to.be.at.least(REQUEST_TIMEOUT_MS - EARLY_SLACK_MS);
        expect(afterMs).to.be.below(REQUEST_TIMEOUT_MS + LATE_MARGIN_MS);
      } finally {
        clearInterval(timer);
      }
      // The cut-off request left the process well.
      expect((await fetch(new URL('/healthz', gw.baseUrl))).status).to.equal(200);
    });

    it('answers a slow client that finishes within the bounds as usual', async () => {
      const request = rawRequestBytes('GET', '/healthz', []);
      const outcome = await trickle(request, Math.floor((HEADERS_TIMEOUT_MS * 0.3) / request.length), HEADERS_TIMEOUT_MS);
      expect(outcome.kind === 'response' ? outcome.response.status : outcome.kind).to.equal(200);
    });

    it('closes a keep-alive connection idle for HTTP_KEEP_ALIVE_TIMEOUT_MS, and not before', async () => {
      const url = new URL(gateway().baseUrl);
      const socket = connect(Number(url.port), url.hostname);
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      let answeredAt: number | undefined;
      const closedAt = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
      socket.on('data', () => (answeredAt ??= Date.now()));
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
      const timer = setTimeout(() => socket.destroy(), KEEP_ALIVE_TIMEOUT_MS + LATE_MARGIN_MS);
      const idleMs = (await closedAt) - answeredAt!;
      clearTimeout(timer);
      expect(idleMs).to.be.at.least(KEEP_ALIVE_TIMEOUT_MS - EARLY_SLACK_MS);
      expect(idleMs).to.be.below(KEEP_ALIVE_TIMEOUT_MS + LATE_MARGIN_MS);
    });
  },
);

const RATE_PER_SECOND = 2;
const BURST = 4;

ownGateway('per-organization rate limit', { RATE_LIMIT_PER_ORG: String(RATE_PER_SECOND), RATE_LIMIT_BURST: String(BURST) }, (gateway) => {
  const feed = (tenant: Tenant, h: Record<string, string>) => gateway().call<ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events?limit=1`, { headers: h });
  const enroll = (tenant: Tenant, h: Record<string, string>) =>
    gateway().call<ErrorEnvelope>('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`, { headers: h, body: {} });
  const policy = (tenant: Tenant, h: Record<string, string>) =>
    gateway().call<ErrorEnvelope>('PATCH', `/projects/${tenant.projectId}/fleets/${uuid()}/edge/policy`, { headers: h, body: {} });

  function expectRateLimited(res: HttpResponse<ErrorEnvelope>): number {
    expectEnvelope(res.status, res.body, 429);
    const retryAfter = res.headers.get('retry-after') ?? '';
    expect(retryAfter).to.match(/^[1-9]\d*$/);
    return Number(retryAfter);
  }

  /** Sends parallel batches until one answer is a 429: a slow machine only needs more batches. */
  async function exhaust(tenant: Tenant, h: Record<string, string>): Promise<HttpResponse<ErrorEnvelope>> {
    return waitFor('a 429', async () => (await Promise.all(Array.from({ length: 10 }, () => feed(tenant, h)))).find((r) => r.status === 429), 30_000, 0);
  }

  it('serves a burst at once, then answers 429 in the envelope with Retry-After in whole seconds', async () => {
    const tenant = gateway().tenant();
    const h = await tenant.headers();
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 20 }, () => feed(tenant, h)));
    const elapsedSeconds = (Date.now() - started) / 1000;
    const served = answers.filter((a) => a.status === 200).length;
    expect(served).to.be.at.least(BURST);
    expect(served).to.be.at.most(BURST + Math.ceil(RATE_PER_SECOND * elapsedSeconds));
    for (const refused of answers.filter((a) => a.status !== 200)) expect(expectRateLimited(refused)).to.be.at.most(Math.ceil(1 / RATE_PER_SECOND));
  });

  it('counts the three operations against one budget per organization, and no other organization', async () => {
    const tenant = gateway().tenant();
    const h = await tenant.headers();
    const refused = new Set<string>();
    await waitFor('a 429 on each operation', async () => {
      const batch = await Promise.all([feed, enroll, policy].flatMap((op) => Array.from({ length: 4 }, async () => [op.name, await op(tenant, h)] as const)));
      for (const [name, res] of batch) {
        expect(res.status, name).to.be.oneOf([200, 202, 429]);
        if (res.status === 429) refused.add(name);
      }
      return refused.size === 3 ? true : undefined;
    }, 30_000, 0);
    const other = gateway().tenant();
    expect((await feed(other, await other.headers())).status).to.equal(200);
  });

  it('serves the organization again within the Retry-After it was given', async () => {
    const tenant = gateway().tenant();
    const h = await tenant.headers();
    const retryAfter = expectRateLimited(await exhaust(tenant, h));
    // Asking while refused costs nothing (a refusal takes no token), so the test polls from
    // the refusal on rather than sleeping. The deadline is the promise plus a margin: a
    // loaded machine answers late, never early. The limiter's exact refill is unit-tested
    // on a clock the test moves (test/unit/http/org-rate-limiter.test.ts).
    await waitFor('the feed answering 200 again', async () => ((await feed(tenant, h)).status === 200 ? true : undefined), retryAfter * 1000 + LATE_MARGIN_MS, 50);
  });

  it('spends nothing on requests refused before it, with 401 or 403', async () => {
    const tenant = gateway().tenant();
    const h = await tenant.headers();
    const noScopes = `Bearer ${await hs256Token(gateway().secret, { orgIds: [tenant.orgId], scopes: [] })}`;
    const refused = await Promise.all(
      Array.from({ length: 20 }, (_, i) => feed(tenant, i % 2 === 0 ? { ...h, authorization: noScopes } : { ...h, authorization: 'Bearer x.y.z' })),
    );
    expect(new Set(refused.map((r) => r.status))).to.deep.equal(new Set([401, 403]));
    const served = await Promise.all(Array.from({ length: BURST }, () => feed(tenant, h)));
    expect(served.map((r) => r.status)).to.deep.equal(Array(BURST).fill(200));
  });

  it('counts refusals by route on /metrics', async () => {
    const tenant = gateway().tenant();
    await exhaust(tenant, await tenant.headers());
    const text = await (await fetch(new URL('/metrics', gateway().baseUrl))).text();
    const [sample] = samplesOf(parseMetrics(text), 'http_rate_limited_total', { route: `${API_PREFIX}/projects/:project_id/events` });
    expect(sample?.value).to.be.above(0);
  });
});
