import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { migrate } from '../../../src/store/migrations.js';
import { hs256Token, uuid } from '../../support/factories.js';
import type { HttpResponse } from '../../support/http-client.js';
import { openEventStream, type SseStream } from '../../support/sse-reader.js';
import { storeEnvironment, skipUnlessServerStoreTested } from '../../support/stores.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clickhouseServer, describeOnEachStore, gatewayOn, LIVE_TAIL_ENV } from './gateways.js';

/**
 * Whatever goes wrong, an error body tells the client what it did or that the service
 * failed, never how the service is built: no stack frames, statements, engine text, file
 * paths, credentials or the secret the gateway signs with.
 */
const INTERNALS: readonly [RegExp, string][] = [
  [/\bat [^\s]+ \(|\n\s+at |:\d+:\d+\)/, 'a stack frame'],
  [/\bSELECT\b|\bINSERT\b|\bFROM events\b|\bDROP\b|\bALTER\b/, 'SQL'],
  [/DB::Exception|Code: \d|UNKNOWN_TABLE|clickhouse|chdb/i, 'engine text'],
  [/\/work\/|node_modules|\.ts\b|\.js\b|\/tmp\//, 'a file path'],
];

function expectNothingInternal(res: { status: number; text: string }, what: string, secrets: readonly string[] = []): void {
  expect(res.status, `${what}: ${res.text}`).to.be.at.least(400);
  const body = JSON.parse(res.text) as ErrorEnvelope;
  expect(body.ok, what).to.equal(0);
  for (const [pattern, name] of INTERNALS) expect(res.text, `${what} carries ${name}`).to.not.match(pattern);
  for (const secret of secrets) expect(res.text.includes(secret), `${what} echoes a credential`).to.equal(false);
}

describeOnEachStore('error secrecy: error bodies reveal nothing internal', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  let token: string;
  const json = { 'content-type': 'application/json' };

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    token = headers['authorization']!.slice('Bearer '.length);
  });

  const secrets = () => [token, gw.secret];
  const events = () => `/projects/${tenant.projectId}/events`;
  const enrollPath = () => `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`;

  it('400: bad query, path, cursor, body and time bounds', async () => {
    const answers: [string, HttpResponse][] = [
      ['limit', await gw.call('GET', `${events()}?limit=abc`, { headers })],
      ['project id', await gw.call('GET', `/projects/not-a-uuid/events`, { headers })],
      ['cursor', await gw.call('GET', `${events()}?cursor=v1.AAAA.BBBB`, { headers })],
      ['time bound', await gw.call('GET', `${events()}?since=2026-13-01T00:00:00Z`, { headers })],
      ['unknown parameter', await gw.call('GET', `${events()}?select=1`, { headers })],
      ['malformed JSON', await gw.call('POST', enrollPath(), { headers: { ...headers, ...json }, body: '{"display_name":' })],
      ['schema violation', await gw.call('POST', enrollPath(), { headers, body: { display_name: 7, extra: "' OR 1=1" } })],
    ];
    for (const [what, res] of answers) {
      expect(res.status, `${what}: ${res.text}`).to.equal(400);
      expectNothingInternal(res, what, secrets());
    }
  });

  it('401: no token, a token signed with another secret and a garbage token, none of them echoed', async () => {
    const forged = await hs256Token(randomBytes(32).toString('hex'), { orgIds: [tenant.orgId] });
    const expired = await hs256Token(gw.secret, { orgIds: [tenant.orgId], ttlSeconds: -120 });
    const garbage = `eyJ${randomBytes(24).toString('base64url')}.${randomBytes(24).toString('base64url')}.sig`;
    const cases: [string, Record<string, string>, string[]][] = [
      ['no token', { 'org-id': tenant.orgId }, []],
      ['forged token', { authorization: `Bearer ${forged}`, 'org-id': tenant.orgId }, [forged, ...forged.split('.')]],
      ['expired token', { authorization: `Bearer ${expired}`, 'org-id': tenant.orgId }, [expired, ...expired.split('.')]],
      ['garbage token', { authorization: `Bearer ${garbage}`, 'org-id': tenant.orgId }, [garbage, ...garbage.split('.')]],
      ['basic credentials', { authorization: 'Basic dXNlcjpodW50ZXIy', 'org-id': tenant.orgId }, ['dXNlcjpodW50ZXIy', 'hunter2']],
    ];
    for (const [what, h, echoes] of cases) {
      const res = await gw.call('GET', events(), { headers: h });
      expect(res.status, `${what}: ${res.text}`).to.equal(401);
      // A part of a token shorter than a few characters could match by chance; the parts here are long.
      expectNothingInternal(res, what, [...echoes.filter((e) => e.length > 8), gw.secret]);
    }
  });

  it('403: another organization in ORG-ID, and a token without the permission', async () => {
    const other = gw.tenant();
    const noScope = await tenant.headers({ scopes: [] });
    const answers: [string, HttpResponse][] = [
      ['foreign ORG-ID', await gw.call('GET', events(), { headers: await tenant.headers({ orgHeader: other.orgId }) })],
      ['missing permission', await gw.call('GET', events(), { headers: noScope })],
      ['missing enroll permission', await gw.call('POST', enrollPath(), { headers: await tenant.headers({ scopes: ['events:read'] }), body: {} })],
    ];
    for (const [what, res] of answers) {
      expect(res.status, `${what}: ${res.text}`).to.equal(403);
      expectNothingInternal(res, what, [...secrets(), noScope['authorization']!.slice(7)]);
    }
  });

  it('404, 405, 413, 415 and 422', async () => {
    const key = { ...headers, 'idempotency-key': uuid() };
    const path = enrollPath();
    expect((await gw.call('POST', path, { headers: key, body: { display_name: 'a' } })).status).to.equal(202);
    const answers: [number, string, HttpResponse][] = [
      [404, 'no route', await gw.call('GET', `/projects/${tenant.projectId}/nothing`, { headers })],
      [404, 'no route outside the API', await gw.call('GET', '/../../etc/passwd', { headers })],
      [405, 'wrong method', await gw.call('DELETE', events(), { headers })],
      [413, 'body too large', await gw.call('POST', enrollPath(), { headers: { ...headers, ...json }, body: `{"meta":{"x":"${'a'.repeat(70_000)}"}}` })],
      [415, 'content type', await gw.call('POST', enrollPath(), { headers: { ...headers, 'content-type': 'text/plain' }, body: '{}' })],
      [415, 'content encoding', await gw.call('POST', enrollPath(), { headers: { ...headers, ...json, 'content-encoding': 'x-junk' }, body: '{}' })],
      [422, 'Idempotency-Key reused', await gw.call('POST', path, { headers: key, body: { display_name: 'b' } })],
    ];
    for (const [status, what, res] of answers) {
      expect(res.status, `${what}: ${res.text}`).to.equal(status);
      expectNothingInternal(res, what, secrets());
    }
  });

  it('429: one live tail more than the organization may hold', async () => {
    const own = gw.tenant();
    const h = await own.headers();
    const url = `${gw.baseUrl}/projects/${own.projectId}/events/stream`;
    const open: SseStream[] = [];
    try {
      for (let i = 0; i < Number(LIVE_TAIL_ENV.STREAM_MAX_PER_ORG); i++) {
        const res = await openEventStream(url, h);
        expect(res.status).to.equal(200);
        open.push(res.stream!);
      }
      const refused = await openEventStream(url, h);
      expect(refused.status).to.equal(429);
      expectNothingInternal({ status: refused.status, text: JSON.stringify(refused.body) }, 'too many streams', [h['authorization']!.slice(7), gw.secret]);
    } finally {
      await Promise.all(open.map((s) => s.close()));
    }
  });
});

describe('error secrecy on a rate-limited gateway and a broken store [clickhouse-server]', function () {
  this.timeout(120_000);
  let limited: TestGateway | undefined;

  before(function () {
    skipUnlessServerStoreTested(this);
  });

  after(() => limited?.close());

  it('429: the per-organization rate limit', async () => {
    // A gateway of this test's own: chDB binds one data directory per process, so only the server store can have a second.
    limited = await startTestGateway({ ...storeEnvironment('clickhouse-server', (await clickhouseServer()).url), RATE_LIMIT_PER_ORG: '1', RATE_LIMIT_BURST: '2' });
    const gw = limited;
    const tenant = gw.tenant();
    const h = await tenant.headers();
    const res = await waitFor(
      'a 429',
      async () => (await Promise.all(Array.from({ length: 5 }, () => gw.call('GET', `/projects/${tenant.projectId}/events`, { headers: h })))).find((r) => r.status === 429),
      30_000,
      0,
    );
    expectNothingInternal(res, 'rate limited', [h['authorization']!.slice(7), gw.secret]);
  });

  it('500 and 503: a dropped table and a server that is down', async () => {
    const infra = await clickhouseServer();
    const gw = await gatewayOn('clickhouse-server');
    const tenant = gw.tenant();
    const h = await tenant.headers();
    const token = h['authorization']!.slice(7);
    const feed = () => gw.call('GET', `/projects/${tenant.projectId}/events?domain=${encodeURIComponent("' OR 1=1 --")}`, { headers: h });
    const tail = () => openEventStream(`${gw.baseUrl}/projects/${tenant.projectId}/events/stream`, h);

    const sql = await openStore(gw.config);
    try {
      await sql.command('DROP TABLE events');
      const broken = await feed();
      expect(broken.status, broken.text).to.equal(500);
      expectNothingInternal(broken, 'the feed over a dropped table', [token, gw.secret]);
      expect(broken.body).to.deep.equal({ ok: 0, message: 'Internal error', detail: 'Internal error.' });
      const brokenTail = await tail();
      if (brokenTail.stream !== undefined) await brokenTail.stream.close();
      else expectNothingInternal({ status: brokenTail.status, text: JSON.stringify(brokenTail.body) }, 'a tail over a dropped table', [token, gw.secret]);
    } finally {
      await migrate(sql);
      await sql.close();
    }
    await waitFor('the feed answering again', async () => ((await feed()).status === 200 ? true : undefined), 30_000, 100);

    const server = infra.server;
    if (server === undefined) {
      // An external server is not ours to take down; the 500 above still ran.
      console.log('      an external ClickHouse server is not ours to stop: the 503 case skipped by choice');
      return;
    }
    await server.takeDown();
    try {
      const down = await feed();
      expect(down.status, down.text).to.equal(503);
      expectNothingInternal(down, 'the feed while the server is down', [token, gw.secret]);
      const enroll = await gw.call('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`, { headers: h, body: {} });
      expect(enroll.status, enroll.text).to.equal(503);
      expectNothingInternal(enroll, 'an enrollment while the server is down', [token, gw.secret]);
    } finally {
      await server.bringBack();
    }
    await waitFor('the feed answering again', async () => ((await feed()).status === 200 ? true : undefined), 30_000, 100);
  });
});
