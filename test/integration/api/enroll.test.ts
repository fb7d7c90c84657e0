import { expect } from 'chai';
import type { CanonicalEventPageResponse, EnrollmentAccepted, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { uuid } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

const schemas = createSchemaRegistry();

interface Accepted {
  ok: 1;
  data: EnrollmentAccepted;
  meta: null;
}

describeOnEachStore('POST .../devices/{device_id}/enroll', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  const fleetId = uuid();

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
  });

  const enrollPath = (deviceId: string) => `/projects/${tenant.projectId}/fleets/${fleetId}/devices/${deviceId}/enroll`;
  const enroll = <B = Accepted>(deviceId: string, body?: unknown, extra: Record<string, string> = {}) =>
    gw.call<B>('POST', enrollPath(deviceId), { headers: { ...headers, ...extra }, body });

  it('answers 202 with the queued enrollment', async () => {
    const deviceId = uuid();
    const body = { display_name: 'Pump 7', enrollment_type: 'factory', external_id: 'SN-7', meta: { site: 'north' } };
    const res = await enroll(deviceId, body);
    expect(res.status).to.equal(202);
    expect(res.body.ok).to.equal(1);
    expect(res.body.meta).to.equal(null);
    expect(schemas.check('enrollment-accepted.schema.json', res.body.data).ok).to.equal(true);
    expect(res.body.data).to.deep.include({ status: 'queued', project_id: tenant.projectId, fleet_id: fleetId, device_id: deviceId, ...body });
    expect(Date.parse(res.body.data.queued_at)).to.be.closeTo(Date.now(), 60_000);
  });

  it('accepts a request with no body, since every field is optional', async () => {
    const res = await gw.call<Accepted>('POST', enrollPath(uuid()), { headers });
    expect(res.status).to.equal(202);
    expect(res.body.data.status).to.equal('queued');
  });

  it('shows the enrollment in the feed as devices/enrollment/queued, before answering', async () => {
    const deviceId = uuid();
    const res = await enroll(deviceId, { display_name: 'Valve' }, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    const feed = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?device_id=${deviceId}`, { headers });
    expect(feed.body.data.items).to.have.length(1);
    expect(feed.body.data.items[0]).to.deep.include({
      org_id: tenant.orgId,
      project_id: tenant.projectId,
      domain: 'devices',
      entity: 'enrollment',
      action: 'queued',
      device_id: deviceId,
      fleet_id: fleetId,
      correlation_id: res.body.data.enrollment_id,
      source_service: 'core-gateway',
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      span_id: 'b7ad6b7169203331',
    });
    expect(feed.body.data.items[0]!.payload).to.deep.equal({ enrollment_id: res.body.data.enrollment_id, display_name: 'Valve' });
  });

  describe('Idempotency-Key', () => {
    it('makes a retry return the same enrollment, and the feed show it once', async () => {
      const deviceId = uuid();
      const key = { 'idempotency-key': `retry-${uuid()}` };
      const first = await enroll(deviceId, { display_name: 'A' }, key);
      const second = await enroll(deviceId, { display_name: 'A' }, key);
      expect(first.status).to.equal(202);
      expect(second.status).to.equal(202);
      expect(second.body.data).to.deep.equal(first.body.data);
      const feed = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?device_id=${deviceId}`, { headers });
      expect(feed.body.data.items).to.have.length(1);
    });

    it('gives different keys different enrollments', async () => {
      const deviceId = uuid();
      const a = await enroll(deviceId, {}, { 'idempotency-key': uuid() });
      const b = await enroll(deviceId, {}, { 'idempotency-key': uuid() });
      expect(a.body.data.enrollment_id).to.not.equal(b.body.data.enrollment_id);
    });

    it('is a 422 when reused with a different body', async () => {
      const deviceId = uuid();
      const key = { 'idempotency-key': uuid() };
      await enroll(deviceId, { display_name: 'A' }, key);
      const res = await enroll<ErrorEnvelope>(deviceId, { display_name: 'B' }, key);
      expect(res.status).to.equal(422);
      expect(res.body).to.deep.include({ ok: 0, message: 'Idempotency-Key reused' });
    });

    it('is scoped to the device: the same key on another device is a new enrollment', async () => {
      const key = { 'idempotency-key': uuid() };
      const a = await enroll(uuid(), {}, key);
      const b = await enroll(uuid(), {}, key);
      expect(b.status).to.equal(202);
      expect(a.body.data.enrollment_id).to.not.equal(b.body.data.enrollment_id);
    });

    it('is a 400 when it is not printable ASCII of 1..255 characters', async () => {
      const res = await enroll<ErrorEnvelope>(uuid(), {}, { 'idempotency-key': 'x'.repeat(256) });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.have.property('header.idempotency-key');
    });
  });

  describe('bad requests', () => {
    it('rejects an unknown body field with 400 naming it', async () => {
      const res = await enroll<ErrorEnvelope>(uuid(), { display_name: 'x', account_id: 'nope' });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.deep.equal({ 'body.account_id': 'is not allowed' });
    });

    it('rejects wrong field types with 400, listing every field', async () => {
      const res = await enroll<ErrorEnvelope>(uuid(), { display_name: 5, meta: 'x', external_id: null });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.have.keys('body.display_name', 'body.meta', 'body.external_id');
    });

    it('rejects a body that is not an object with 400', async () => {
      for (const body of ['[1,2]', '"text"', '42', 'null']) {
        const res = await gw.call<ErrorEnvelope>('POST', enrollPath(uuid()), { headers: { ...headers, 'content-type': 'application/json' }, body });
        expect(res.status, body).to.equal(400);
        expect(res.body.message).to.have.property('body');
      }
    });

    it('rejects malformed JSON with 400', async () => {
      const res = await gw.call<ErrorEnvelope>('POST', enrollPath(uuid()), { headers: { ...headers, 'content-type': 'application/json' }, body: '{"display_name":' });
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal({ ok: 0, message: 'Malformed JSON', detail: 'The request body is not valid JSON.' });
    });

    it('refuses a __proto__ key as malformed JSON', async () => {
      const res = await gw.call<ErrorEnvelope>('POST', enrollPath(uuid()), {
        headers: { ...headers, 'content-type': 'application/json' },
        body: '{"meta":{"__proto__":{"polluted":true}}}',
      });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.equal('Malformed JSON');
    });

    it('rejects a body that is not what its Content-Encoding says with 400', async () => {
      const res = await gw.call<ErrorEnvelope>('POST', enrollPath(uuid()), {
        headers: { ...headers, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: '{"display_name":"not gzip"}',
      });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.equal('Undecodable body');
    });

    it('accepts a gzip body', async () => {
      const { gzipSync } = await import('node:zlib');
      const res = await fetch(`${gw.baseUrl}${enrollPath(uuid())}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: gzipSync(JSON.stringify({ display_name: 'zipped' })),
      });
      expect(res.status).to.equal(202);
      expect(((await res.json()) as { data: { display_name: string } }).data.display_name).to.equal('zipped');
    });

    // Found by the fuzz suite: an unknown Content-Encoding, GZIP in capitals included, answered 500.
    it('takes a content coding in any case and refuses an unknown one with 415', async () => {
      const { gzipSync } = await import('node:zlib');
      const upper = await fetch(`${gw.baseUrl}${enrollPath(uuid())}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-encoding': 'GZIP' },
        body: gzipSync(JSON.stringify({ display_name: 'zipped' })),
      });
      expect(upper.status).to.equal(202);
      for (const coding of ['x-junk', 'gzip, gzip', 'compress']) {
        const res = await gw.call<ErrorEnvelope>('POST', enrollPath(uuid()), { headers: { ...headers, 'content-type': 'application/json', 'content-encoding': coding }, body: '{}' });
        expect(res.status, coding).to.equal(415);
        expect(schemas.check('error-envelope.schema.json', res.body).ok).to.equal(true);
      }
    });

    // Found by the fuzz suite: a br body that is not brotli answered 500.
    it('rejects a br body that is not brotli with 400', async () => {
      const res = await gw.call<ErrorEnvelope>('POST', enrollPath(uuid()), { headers: { ...headers, 'content-type': 'application/json', 'content-encoding': 'br' }, body: 'abcde' });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.equal('Undecodable body');
    });

    it('rejects another content type with 415', async () => {
      const res = await gw.call<ErrorEnvelope>('POST', enrollPath(uuid()), { headers: { ...headers, 'content-type': 'text/plain' }, body: 'hello' });
      expect(res.status).to.equal(415);
      expect(res.body.ok).to.equal(0);
    });

    it('rejects a body over 64 KiB with 413', async () => {
      const res = await enroll<ErrorEnvelope>(uuid(), { display_name: 'x', meta: { blob: 'x'.repeat(70 * 1024) } });
      expect(res.status).to.equal(413);
      expect(res.body).to.deep.include({ ok: 0, message: 'Request body too large' });
    });

    it('accepts a body just under the limit', async () => {
      const res = await enroll(uuid(), { meta: { blob: 'x'.repeat(60 * 1024) } });
      expect(res.status).to.equal(202);
    });

    it('rejects query parameters, which the operation does not take, with 400', async () => {
      const res = await gw.call<ErrorEnvelope>('POST', `${enrollPath(uuid())}?account_id=1`, { headers, body: {} });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.deep.equal({ 'query.account_id': 'is not allowed' });
    });

    it('rejects path ids that are not uuids with 400, listing each', async () => {
      const res = await gw.call<ErrorEnvelope>('POST', `/projects/p/fleets/f/devices/${uuid()}/enroll`, { headers, body: {} });
      expect(res.status).to.equal(400);
      expect(res.body.message).to.have.keys('path.project_id', 'path.fleet_id');
    });
  });
});
