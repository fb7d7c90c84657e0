import { expect } from 'chai';
import { uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { startTestGateway, type TestGateway, type Tenant } from '../../support/test-gateway.js';
import { storeEnvironment, skipUnlessServerStoreTested } from '../../support/stores.js';
import { clickhouseServer, describeOnEachStore } from './gateways.js';

describeOnEachStore('Prometheus metrics', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
  });

  const scrape = async (baseUrl: string) => {
    const res = await request('GET', new URL('/metrics', baseUrl).toString());
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    return parseMetrics(res.text);
  };

  it('times requests by route template and status, without credentials, beside the process metrics', async () => {
    const headers = await tenant.headers();
    const route = '/core/api/v1/projects/:project_id/events';
    const count = async (status: string) =>
      samplesOf(await scrape(gw.baseUrl), 'http_request_duration_seconds_count', { method: 'GET', route, status }).reduce((n, s) => n + s.value, 0);
    const before = { ok: await count('200'), unauthorized: await count('401') };
    await gw.call('GET', `/projects/${tenant.projectId}/events`, { headers });
    await gw.call('GET', `/projects/${tenant.projectId}/events`, { headers });
    await gw.call('GET', `/projects/${tenant.projectId}/events`);
    expect(await count('200')).to.equal(before.ok + 2);
    expect(await count('401')).to.equal(before.unauthorized + 1);

    await gw.call('GET', `/no/such/${uuid()}`);
    const samples = await scrape(gw.baseUrl);
    expect(samplesOf(samples, 'http_request_duration_seconds_count', { route: 'unmatched', status: '404' })).to.have.length(1);
    expect(samples.some((s) => s.labels['route']?.includes(tenant.projectId)), 'no series per project').to.equal(false);
    expect(samplesOf(samples, 'process_resident_memory_bytes')[0]!.value).to.be.above(0);
  });
});

describe('OPS_PORT: health and metrics on a port of their own [clickhouse-server]', function () {
  this.timeout(60_000);
  let gw: TestGateway | undefined;

  before(async function () {
    // chDB binds one data directory per process, and the suite's chDB gateway holds it.
    skipUnlessServerStoreTested(this);
    gw = await startTestGateway({ ...storeEnvironment('clickhouse-server', (await clickhouseServer()).url), OPS_PORT: '0' });
  });
  after(() => gw?.close());

  it('serves /healthz, /readyz and /metrics there and not on the API port', async () => {
    const { url, opsUrl } = gw!.runtime;
    expect(opsUrl).to.be.a('string').and.not.equal(url);
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect((await request('GET', new URL(path, opsUrl).toString())).status, `${path} on OPS_PORT`).to.equal(200);
      const onApi = await request('GET', new URL(path, url).toString());
      expect(onApi.status, `${path} on PORT`).to.equal(404);
      expect(onApi.body).to.deep.include({ ok: 0 });
    }
  });
});
