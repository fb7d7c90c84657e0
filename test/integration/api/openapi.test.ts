import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { openEventStream } from '../../support/sse-reader.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

interface OpenApi {
  readonly paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
  readonly components: object;
}

const checkedIn = JSON.parse(readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8')) as OpenApi;

describeOnEachStore('answers as its OpenAPI document says', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  let served: OpenApi;
  const validators = new Map<string, ValidateFunction>();

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    served = (await request<OpenApi>('GET', `${gw.baseUrl}/openapi.json`)).body;
  });

  /** Validates a real answer against the schema the document gives for that path, method and status. */
  function expectDocumented(path: string, method: string, res: { status: number; body: unknown }): void {
    const key = `${method} ${path} ${res.status}`;
    let validate = validators.get(key);
    if (validate === undefined) {
      const schema = served.paths[path]?.[method]?.responses[String(res.status)]?.content?.['application/json']?.schema;
      expect(schema, `the document has no ${key}`).to.not.equal(undefined);
      // The component references resolve against this root.
      const ajv = new Ajv({ strict: false, allErrors: true });
      addFormats(ajv);
      validate = ajv.compile({ allOf: [schema], components: served.components });
      validators.set(key, validate);
    }
    expect(validate(res.body), `${key}: ${JSON.stringify(validate.errors)}`).to.equal(true);
  }

  it('serves the checked-in document at /openapi.json without credentials', async () => {
    const res = await request<OpenApi>('GET', `${gw.baseUrl}/openapi.json`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.body).to.deep.equal(checkedIn);
  });

  it('answers the feed with documented pages and errors', async () => {
    const path = '/projects/{project_id}/events';
    const feed = (query: string, h = headers) => gw.call('GET', `/projects/${tenant.projectId}/events${query}`, { headers: h });
    expectDocumented(path, 'get', await feed('?limit=5'));
    expectDocumented(path, 'get', await feed('?limit=abc'));
    expectDocumented(path, 'get', await feed('', {}));
    expectDocumented(path, 'get', await feed('', await tenant.headers({ scopes: ['devices:enroll'] })));
  });

  it('answers the live tail with a documented stream and documented refusals', async () => {
    const path = '/projects/{project_id}/events/stream';
    const url = `${gw.baseUrl}/projects/${tenant.projectId}/events/stream`;
    const open = await openEventStream(url, headers);
    await open.stream!.close();
    expect(Object.keys(served.paths[path]!['get']!.responses['200']!.content!)).to.deep.equal([open.headers.get('content-type')]);
    expectDocumented(path, 'get', await openEventStream(`${url}?limit=5`, headers));
    expectDocumented(path, 'get', await openEventStream(url, { ...headers, 'last-event-id': 'not-a-position' }));
    expectDocumented(path, 'get', await openEventStream(url, {}));
    expectDocumented(path, 'get', await openEventStream(url, await tenant.headers({ scopes: ['devices:enroll'] })));
  });

  it('answers enrollments with documented acceptances and errors', async () => {
    const path = '/projects/{project_id}/fleets/{fleet_id}/devices/{device_id}/enroll';
    const url = `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`;
    expectDocumented(path, 'post', await gw.call('POST', url, { headers, body: { display_name: 'Pump 7', meta: { rack: 3 } } }));
    expectDocumented(path, 'post', await gw.call('POST', url, { headers, body: { display_name: 7 } }));
    expectDocumented(path, 'post', await gw.call('POST', url, { headers: { ...headers, 'content-type': 'text/plain' }, body: 'hello' }));
    await gw.call('POST', url, { headers: { ...headers, 'idempotency-key': 'openapi-k' }, body: {} });
    expectDocumented(path, 'post', await gw.call('POST', url, { headers: { ...headers, 'idempotency-key': 'openapi-k' }, body: { external_id: 'other' } }));
  });

  it('answers edge-policy patches with documented acceptances and errors', async () => {
    const path = '/projects/{project_id}/fleets/{fleet_id}/edge/policy';
    const url = `/projects/${tenant.projectId}/fleets/${uuid()}/edge/policy`;
    expectDocumented(path, 'patch', await gw.call('PATCH', url, { headers, body: { sync: { every_s: 30 } } }));
    expectDocumented(path, 'patch', await gw.call('PATCH', url, { headers, body: '[1]' }));
  });
});
