import { expect } from 'chai';
import type { ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { uuid } from '../../support/factories.js';
import type { TestGateway } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

const schemas = createSchemaRegistry();

describeOnEachStore('error envelope for unmatched requests', (gateway) => {
  let gw: TestGateway;
  before(async () => {
    gw = await gateway();
  });

  function expectEnvelope(body: unknown) {
    const checked = schemas.check('error-envelope.schema.json', body);
    expect(checked.ok, JSON.stringify(body)).to.equal(true);
  }

  it('answers an unknown route with 404 in the envelope', async () => {
    const res = await gw.call<ErrorEnvelope>('GET', '/projects');
    expect(res.status).to.equal(404);
    expectEnvelope(res.body);
    expect(res.body.message).to.equal('Not found');
  });

  it('answers a path outside the API prefix with 404 in the envelope', async () => {
    const res = await fetch(new URL('/', gw.baseUrl));
    expect(res.status).to.equal(404);
    expectEnvelope(await res.json());
  });

  it('answers a wrong method with 405, the envelope and an Allow header', async () => {
    const res = await gw.call<ErrorEnvelope>('DELETE', `/projects/${uuid()}/events`);
    expect(res.status).to.equal(405);
    expectEnvelope(res.body);
    expect(res.headers.get('allow')).to.equal('HEAD, GET');
  });

  it('answers headers over the server limit with 431 in the envelope', async () => {
    const res = await gw.call<ErrorEnvelope>('GET', `/projects/${uuid()}/events`, { headers: { authorization: `Bearer ${'a'.repeat(20_000)}` } });
    expect(res.status).to.equal(431);
    expectEnvelope(res.body);
  });

  it('answers 405 for GET on the enroll route', async () => {
    const res = await gw.call<ErrorEnvelope>('GET', `/projects/${uuid()}/fleets/${uuid()}/devices/${uuid()}/enroll`);
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('POST');
  });
});

describeOnEachStore('health endpoints', (gateway) => {
  let gw: TestGateway;
  before(async () => {
    gw = await gateway();
  });

  it('answers /healthz and /readyz without credentials', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(new URL(path, gw.baseUrl));
      expect(res.status, path).to.equal(200);
      expect(await res.json()).to.deep.include({ ok: 1 });
    }
  });

  it('names what /readyz checked: the store and the process itself, and no Kafka on the in-process bus', async () => {
    const res = await fetch(new URL('/readyz', gw.baseUrl));
    expect(await res.json()).to.deep.equal({ ok: 1, data: { status: 'ready', checks: { store: 'ok', process: 'ok' } }, meta: null });
  });
});
