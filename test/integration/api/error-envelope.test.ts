import { expect } from 'chai';
import type { ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { uuid } from '../../support/factories.js';
import { rawExchange, rawRequestBytes } from '../../support/raw-http.js';
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

  /** Sends raw bytes and returns the status and parsed body of the answer, failing on anything else. */
  async function raw(method: string, target: string, headers: [string, string][] = [], options: { withoutHost?: boolean } = {}) {
    const outcome = await rawExchange(new URL(gw.baseUrl), rawRequestBytes(method, target, headers, Buffer.alloc(0), options), { waitMs: 5000 });
    if (outcome.kind !== 'response') throw new Error(`expected an answer, got ${JSON.stringify(outcome)}`);
    const body: unknown = JSON.parse(outcome.response.body);
    expectEnvelope(body);
    return { status: outcome.response.status, headers: outcome.response.headers, body };
  }

  // Found by the fuzz suite: the router answered a method it does not know with a bare 501.
  it('answers a method the router does not know with 405 where the path has routes, 404 where none', async () => {
    const routed = await raw('PROPFIND', `${API_PREFIX}/projects/${uuid()}/events`);
    expect(routed.status).to.equal(405);
    expect(routed.headers['allow']).to.equal('HEAD, GET');
    expect((await raw('PROPFIND', `${API_PREFIX}/nowhere`)).status).to.equal(404);
  });

  // Found by the fuzz suite: Node answered an unknown Expect with a bare 417.
  it('answers an expectation other than 100-continue with 417 in the envelope', async () => {
    expect((await raw('GET', `${API_PREFIX}/projects/${uuid()}/events`, [['Expect', 'something-else']])).status).to.equal(417);
  });

  // Found while writing the fuzz suite: Node hangs up on CONNECT without a word, and refuses a missing Host with a bare 400.
  it('answers CONNECT with 405 and a request without Host like any other, in the envelope', async () => {
    expect((await raw('CONNECT', 'example.com:443')).status).to.equal(405);
    expect((await raw('GET', `${API_PREFIX}/projects/${uuid()}/events`, [], { withoutHost: true })).status).to.equal(401);
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
