import { expect } from 'chai';
import { permissions } from '../../../src/auth/principal.js';
import { catalogue } from '../../../src/commands/catalogue.js';
import { pathParameters } from '../../../src/commands/command-entry.js';
import type { CanonicalEvent, CanonicalEventPageResponse, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { uuid } from '../../support/factories.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

const schemas = createSchemaRegistry();

type Accepted = { ok: 1; data: Record<string, unknown>; meta: null };

/**
 * Every catalogue entry through the same cases, so a new entry is tested the moment it
 * exists: its own tests need only cover what is its own (its body's rules, its event's
 * payload). The request is the entry's documented example, on fresh ids of the tenant; a second
 * request with another body uses the entry's other example body (`docs.example.anotherBody`).
 */
for (const entry of catalogue) {
  describeOnEachStore(`command ${entry.http.method.toUpperCase()} ${entry.http.path} (catalogue entry ${entry.name})`, (gateway) => {
    let gw: TestGateway;
    let tenant: Tenant;
    let headers: Record<string, string>;
    const method = entry.http.method.toUpperCase();

    before(async () => {
      gw = await gateway();
      tenant = gw.tenant();
      headers = await tenant.headers();
    });

    /** The entry's path with the tenant's project and fresh ids, or with `replace` for every id. */
    const pathOf = (replace?: string) =>
      entry.http.path.replace(/:([a-z_]+)/g, (_, name: string) => replace ?? (name === 'project_id' ? tenant.projectId : uuid()));
    const body = entry.docs.example.body;

    const eventsOf = async (commandId: string): Promise<CanonicalEvent[]> => {
      const feed = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?limit=200`, { headers });
      expect(feed.status).to.equal(200);
      return feed.body.data.items.filter((event) => event.correlation_id === commandId);
    };

    it(`answers ${entry.http.status} with its accepted schema, and the feed shows the ${entry.event.domain}/${entry.event.entity}/${entry.event.action} event once`, async () => {
      const path = pathOf();
      const res = await gw.call<Accepted>(method, path, { headers, body });
      expect(res.status, res.text).to.equal(entry.http.status);
      expect(res.body).to.include({ ok: 1, meta: null });
      expect(schemas.check(entry.schemas.accepted, res.body.data).ok).to.equal(true);
      const ids = Object.fromEntries(pathParameters(entry).map((name, i) => [name, path.split('/').filter((part) => part.length === 36)[i]]));
      expect(res.body.data).to.include(ids);
      const events = await eventsOf(res.body.data[entry.idField] as string);
      expect(events).to.have.length(1);
      expect(events[0]).to.include({ domain: entry.event.domain, entity: entry.event.entity, action: entry.event.action, source_service: 'core-gateway', fleet_id: ids['fleet_id'] });
    });

    it('answers 401 without a token', async () => {
      const res = await gw.call<ErrorEnvelope>(method, pathOf(), { headers: { 'org-id': tenant.orgId }, body });
      expect(res.status).to.equal(401);
      expect(res.body.ok).to.equal(0);
    });

    it(`answers 403 to a token without ${entry.permission}, and to one of another organization`, async () => {
      const without = await tenant.headers({ scopes: permissions.filter((permission) => permission !== entry.permission) });
      const res = await gw.call<ErrorEnvelope>(method, pathOf(), { headers: without, body });
      expect(res.status).to.equal(403);
      expect(res.body.detail).to.include(entry.permission);
      const elsewhere = await tenant.headers({ orgIds: [uuid()] });
      expect((await gw.call(method, pathOf(), { headers: elsewhere, body })).status).to.equal(403);
    });

    it('answers 400 naming every bad path id, an unknown query parameter and a body against its schema', async () => {
      const badPath = await gw.call<ErrorEnvelope>(method, pathOf('not-a-uuid'), { headers, body });
      expect(badPath.status).to.equal(400);
      for (const name of pathParameters(entry)) expect(badPath.body.detail, name).to.include(`path.${name}`);
      const query = await gw.call<ErrorEnvelope>(method, `${pathOf()}?unexpected=1`, { headers, body });
      expect(query.status).to.equal(400);
      const badBody = await gw.call<ErrorEnvelope>(method, pathOf(), { headers, body: [] });
      expect(badBody.status).to.equal(400);
      expect(badBody.body.ok).to.equal(0);
    });

    it('answers 415 to a body that is not JSON', async () => {
      const res = await gw.call<ErrorEnvelope>(method, pathOf(), { headers: { ...headers, 'content-type': 'text/plain' }, body: 'hello' });
      expect(res.status).to.equal(415);
    });

    if (entry.idempotency !== undefined) {
      it(`answers a retry with one Idempotency-Key with the same ${entry.idField}, and puts one event in the feed`, async () => {
        const path = pathOf();
        const key = `conformance-${uuid()}`;
        const first = await gw.call<Accepted>(method, path, { headers: { ...headers, 'idempotency-key': key }, body });
        const second = await gw.call<Accepted>(method, path, { headers: { ...headers, 'idempotency-key': key }, body });
        expect([first.status, second.status]).to.deep.equal([entry.http.status, entry.http.status]);
        expect(second.body.data).to.deep.equal(first.body.data);
        expect(await eventsOf(first.body.data[entry.idField] as string)).to.have.length(1);
      });

      it('answers 422 to a key reused with another request, and 400 to a malformed key', async () => {
        const key = `conformance-${uuid()}`;
        const path = pathOf();
        expect((await gw.call(method, path, { headers: { ...headers, 'idempotency-key': key }, body })).status).to.equal(entry.http.status);
        // Another request on the same path (keys are scoped to it): the entry's other example body.
        const other = entry.docs.example.anotherBody;
        expect(schemas.check(entry.schemas.request, other).ok && JSON.stringify(other) !== JSON.stringify(body), 'the other example body is another valid request').to.equal(true);
        const reused = await gw.call<ErrorEnvelope>(method, path, { headers: { ...headers, 'idempotency-key': key }, body: other });
        expect(reused.status).to.equal(422);
        const malformed = await gw.call<ErrorEnvelope>(method, path, { headers: { ...headers, 'idempotency-key': 'with space' }, body });
        expect(malformed.status).to.equal(400);
        expect(malformed.body.detail).to.include('header.idempotency-key');
      });
    } else {
      it('takes no Idempotency-Key: two requests with one are two commands', async () => {
        const key = `conformance-${uuid()}`;
        const path = pathOf();
        const first = await gw.call<Accepted>(method, path, { headers: { ...headers, 'idempotency-key': key }, body });
        const second = await gw.call<Accepted>(method, path, { headers: { ...headers, 'idempotency-key': key }, body });
        expect([first.status, second.status]).to.deep.equal([entry.http.status, entry.http.status]);
        expect(second.body.data).to.not.deep.equal(first.body.data);
      });
    }
  });
}
