import { expect } from 'chai';
import type { ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { migrate } from '../../../src/store/migrations.js';
import { uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import type { StoreServerControl } from '../../support/infra.js';
import { skipUnlessServerStoreTested } from '../../support/stores.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clickhouseServer, gatewayOn } from './gateways.js';

// storeEnvironment gives the server gateway CLICKHOUSE_REQUEST_TIMEOUT_MS=3000; an answer may take a little longer.
const ANSWER_BOUND_MS = 3000 + 2000;

/** What a client sees of one request: status, envelope and how long it took. */
async function timed(call: () => Promise<{ status: number; body: unknown; text: string }>) {
  const started = Date.now();
  const res = await call();
  return { ...res, took: Date.now() - started };
}

describe('a ClickHouse server that stalls, dies or fails [clickhouse-server]', function () {
  this.timeout(120_000);
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  let server: StoreServerControl;

  before(async function () {
    skipUnlessServerStoreTested(this);
    const control = (await clickhouseServer()).server;
    if (control === undefined) {
      console.log('      an external ClickHouse server is not ours to break: TEST_INFRA=external skips these by choice');
      this.skip();
    }
    server = control;
    gw = await gatewayOn('clickhouse-server');
    tenant = gw.tenant();
    headers = await tenant.headers();
  });

  const feed = () => gw.call<ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events`, { headers });
  const enroll = () => gw.call<ErrorEnvelope>('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`, { headers, body: {} });
  const ready = () => request<ErrorEnvelope>('GET', new URL('/readyz', gw.baseUrl).toString());

  const expectUnavailable = (res: { status: number; body: unknown; took: number }, what: string) => {
    expect(res.status, what).to.equal(503);
    expect(res.body, what).to.deep.include({ ok: 0 });
    expect(res.took, `${what} answered within the bound`).to.be.below(ANSWER_BOUND_MS);
  };

  it('answers 503 within the request timeout while the server stalls, and 200 again once it answers', async () => {
    expect((await feed()).status).to.equal(200);
    await server.freeze();
    try {
      expectUnavailable(await timed(feed), 'the feed');
      expectUnavailable(await timed(enroll), 'an enrollment');
    } finally {
      await server.thaw();
    }
    await waitFor('the feed answering again', async () => ((await feed()).status === 200 ? true : undefined), 30_000, 100);
  });

  it('answers 503 while the server is down, and recovers without a restart once it is back', async () => {
    await server.takeDown();
    try {
      expectUnavailable(await timed(feed), 'the feed');
      expectUnavailable(await timed(enroll), 'an enrollment');
      const notReady = await timed(ready);
      expectUnavailable(notReady, '/readyz');
      expect(notReady.body).to.deep.include({ detail: 'Not ready: store is not reachable.' });
    } finally {
      await server.bringBack();
    }
    await waitFor('the feed answering again', async () => ((await feed()).status === 200 ? true : undefined), 30_000, 100);
    expect((await enroll()).status).to.equal(202);
    expect((await ready()).status).to.equal(200);
  });

  it("answers the server's own errors with the envelope, never their text", async () => {
    const sql = await openStore(gw.config);
    try {
      await sql.command('DROP TABLE events');
      const res = await feed();
      expect(res.status).to.equal(500);
      expect(res.body).to.deep.include({ ok: 0, detail: 'Internal error.' });
      expect(res.text).to.not.match(/events|UNKNOWN_TABLE|SELECT|Code:/);
    } finally {
      await migrate(sql);
      await sql.close();
    }
    expect((await feed()).status).to.equal(200);
  });
});
