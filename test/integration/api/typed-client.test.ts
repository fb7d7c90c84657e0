import { expect } from 'chai';
import { createCoreApiClient, CoreApiError, type CanonicalEvent, type CoreApiClient, type FetchLike, type RetryOptions } from '../../../client/index.js';
import { canonicalEvent, eventSeries, hs256Token, uuid } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clickhouseServer, describeOnEachStore } from './gateways.js';

/** What the gateway answered to each try the client made; observed around the real fetch, not instead of it. */
interface Observed {
  readonly method: string;
  readonly status: number;
  readonly idempotencyKey: string | null;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

const newestFirst = (events: readonly CanonicalEvent[]) => [...events].reverse().map((e) => e.id);

describeOnEachStore('typed client', (gateway, store) => {
  let gw: TestGateway;

  before(async () => {
    gw = await gateway();
  });

  /** A client for `tenant` that mints its token on every request, as a refreshing integrator would. */
  const clientFor = (tenant: Tenant, options: { scopes?: readonly string[]; fetch?: FetchLike; retry?: RetryOptions } = {}): CoreApiClient =>
    createCoreApiClient({
      baseUrl: gw.runtime.url,
      token: () => hs256Token(gw.secret, { orgIds: [tenant.orgId], ...(options.scopes === undefined ? {} : { scopes: options.scopes }) }),
      orgId: tenant.orgId,
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      ...(options.retry === undefined ? {} : { retry: options.retry }),
    });

  /** The real fetch, recording each answer's status. */
  const observing = (log: Observed[]): FetchLike => async (url, init) => {
    const response = await fetch(url, init);
    log.push({ method: init.method ?? 'GET', status: response.status, idempotencyKey: new Headers(init.headers).get('idempotency-key') });
    return response;
  };

  describe('events', () => {
    it('pages through 130 events with limit 50: every event once, newest first, three requests', async () => {
      const tenant = gw.tenant();
      const seeded = eventSeries(130, { org_id: tenant.orgId, project_id: tenant.projectId });
      await gw.seed(seeded);
      const log: Observed[] = [];
      const client = clientFor(tenant, { fetch: observing(log) });

      const ids: string[] = [];
      for await (const event of client.events.list(tenant.projectId, { limit: 50 })) ids.push(event.id);

      expect(ids).to.deep.equal(newestFirst(seeded));
      expect(log.map((o) => o.status)).to.deep.equal([200, 200, 200]);
    });

    it('yields whole pages with their meta, the last one closing the feed', async () => {
      const tenant = gw.tenant();
      await gw.seed(eventSeries(130, { org_id: tenant.orgId, project_id: tenant.projectId }));
      const pages = await collect(clientFor(tenant).events.listPages(tenant.projectId, { limit: 50 }));
      expect(pages.map((p) => p.meta.count)).to.deep.equal([50, 50, 30]);
      expect(pages.map((p) => p.items.length)).to.deep.equal([50, 50, 30]);
      expect(pages.map((p) => p.meta.has_more)).to.deep.equal([true, true, false]);
      expect(pages.at(-1)!.meta).to.deep.equal({ items_per_page: 50, count: 30, has_more: false, next_cursor: null });
    });

    it('fetches one page, and the next with its cursor', async () => {
      const tenant = gw.tenant();
      const seeded = eventSeries(5, { org_id: tenant.orgId, project_id: tenant.projectId });
      await gw.seed(seeded);
      const client = clientFor(tenant);
      const first = await client.events.page(tenant.projectId, { limit: 3 });
      expect(first.meta).to.deep.include({ items_per_page: 3, count: 3, has_more: true });
      const second = await client.events.page(tenant.projectId, { limit: 3, cursor: first.meta.next_cursor! });
      expect([...first.items, ...second.items].map((e) => e.id)).to.deep.equal(newestFirst(seeded));
      expect(second.meta).to.deep.equal({ items_per_page: 3, count: 2, has_more: false, next_cursor: null });
    });

    it('passes the filters through, across pages', async () => {
      const tenant = gw.tenant();
      const deviceA = uuid();
      const deviceB = uuid();
      const start = Date.parse('2026-04-01T00:00:00Z');
      const own = { org_id: tenant.orgId, project_id: tenant.projectId };
      const wanted = eventSeries(5, { ...own, domain: 'alarms', device_id: deviceA }, start);
      await gw.seed([
        ...wanted,
        ...eventSeries(4, { ...own, domain: 'telemetry', device_id: deviceA }, start),
        ...eventSeries(4, { ...own, domain: 'alarms', device_id: deviceB }, start),
      ]);
      const client = clientFor(tenant);

      const matching = await collect(client.events.list(tenant.projectId, { domain: 'alarms', device_id: deviceA, limit: 2 }));
      expect(matching.map((e) => e.id)).to.deep.equal(newestFirst(wanted));

      // [since, until) around the 2nd to 4th of the wanted events.
      const window = await collect(
        client.events.list(tenant.projectId, {
          domain: 'alarms',
          device_id: deviceA,
          since: new Date(start + 1000).toISOString(),
          until: new Date(start + 4000).toISOString(),
        }),
      );
      expect(window.map((e) => e.id)).to.deep.equal(newestFirst(wanted.slice(1, 4)));
    });

    it('stops fetching when the loop stops', async () => {
      const tenant = gw.tenant();
      await gw.seed(eventSeries(30, { org_id: tenant.orgId, project_id: tenant.projectId }));
      const log: Observed[] = [];
      let taken = 0;
      for await (const event of clientFor(tenant, { fetch: observing(log) }).events.list(tenant.projectId, { limit: 10 })) {
        expect(event.project_id).to.equal(tenant.projectId);
        if ((taken += 1) === 12) break;
      }
      expect(log).to.have.length(2);
    });
  });

  describe('commands', () => {
    it('enrolls, and a second call with the same idempotencyKey returns the same enrollment', async () => {
      const tenant = gw.tenant();
      const client = clientFor(tenant);
      const [fleetId, deviceId] = [uuid(), uuid()];
      const body = { display_name: 'Pump 7', enrollment_type: 'factory', external_id: 'SN-7', meta: { site: 'north' } };
      const key = `typed-client-${uuid()}`;

      const first = await client.devices.enroll(tenant.projectId, fleetId, deviceId, body, { idempotencyKey: key });
      expect(first).to.deep.include({ status: 'queued', project_id: tenant.projectId, fleet_id: fleetId, device_id: deviceId, ...body });
      expect(first.enrollment_id).to.match(/^[0-9a-f-]{36}$/);

      const again = await client.devices.enroll(tenant.projectId, fleetId, deviceId, body, { idempotencyKey: key });
      expect(again).to.deep.equal(first);

      // Without a key of the caller's, each call has a key of its own: a new enrollment.
      const other = await client.devices.enroll(tenant.projectId, fleetId, deviceId, body);
      expect(other.enrollment_id).to.not.equal(first.enrollment_id);

      const events = await waitFor('both enrollments in the feed', async () => {
        const found = await collect(client.events.list(tenant.projectId, { domain: 'devices', device_id: deviceId }));
        return found.length >= 2 ? found : undefined;
      });
      expect(events.map((e) => e.correlation_id).sort()).to.deep.equal([first.enrollment_id, other.enrollment_id].sort());
    });

    it('enrolls with no body at all', async () => {
      const tenant = gw.tenant();
      const accepted = await clientFor(tenant).devices.enroll(tenant.projectId, uuid(), uuid());
      expect(accepted.status).to.equal('queued');
    });

    it('patches the edge policy of a fleet', async () => {
      const tenant = gw.tenant();
      const client = clientFor(tenant);
      const fleetId = uuid();
      const patch = { replication: { interval_s: 30, targets: ['a', 'b'] }, retired_rule: null };

      const accepted = await client.edgePolicy.patch(tenant.projectId, fleetId, patch);
      expect(accepted).to.deep.include({ project_id: tenant.projectId, fleet_id: fleetId, patch, status: 'accepted' });
      expect(Date.parse(accepted.accepted_at)).to.be.closeTo(Date.now(), 60_000);

      const [event] = await waitFor('the policy update in the feed', async () => {
        const found = await collect(client.events.list(tenant.projectId, { fleet_id: fleetId }));
        return found.length > 0 ? found : undefined;
      });
      expect(event).to.deep.include({ domain: 'edge', entity: 'policy', action: 'update_queued', correlation_id: accepted.command_id });
    });
  });

  describe('errors', () => {
    it('throws a 403 as a CoreApiError with the envelope and the request id', async () => {
      const tenant = gw.tenant();
      const requestId = `req-${uuid()}`;
      const readOnly = clientFor(tenant, { scopes: ['events:read'] });
      const error = await rejection(readOnly.devices.enroll(tenant.projectId, uuid(), uuid(), {}, { requestId }));

      expect(error).to.be.instanceOf(CoreApiError);
      const apiError = error as CoreApiError;
      expect(apiError.status).to.equal(403);
      expect(apiError.envelope).to.deep.equal({ ok: 0, message: 'Forbidden', detail: 'The token lacks the "devices:enroll" permission.' });
      expect(apiError.errorMessage).to.equal('Forbidden');
      expect(apiError.requestId).to.equal(requestId);
      expect(apiError.attempts).to.equal(1);
    });

    it('throws a 400 with the fields that failed, from inside a for await', async () => {
      const tenant = gw.tenant();
      const requestId = `req-${uuid()}`;
      const error = await rejection(collect(clientFor(tenant).events.list(tenant.projectId, { device_id: 'not-a-uuid', limit: 10 }, { requestId })));

      expect(error).to.be.instanceOf(CoreApiError);
      const apiError = error as CoreApiError;
      expect(apiError.status).to.equal(400);
      expect(apiError.fields).to.have.property('query.device_id');
      expect(apiError.requestId).to.equal(requestId);
      expect(apiError.method).to.equal('GET');
    });

    it('throws a 401 for a token of another secret, without retrying', async () => {
      const tenant = gw.tenant();
      const log: Observed[] = [];
      const client = createCoreApiClient({
        baseUrl: gw.runtime.url,
        token: await hs256Token('not-the-gateway-secret-not-the-gateway-secret', { orgIds: [tenant.orgId] }),
        orgId: tenant.orgId,
        fetch: observing(log),
      });
      const error = await rejection(client.events.page(tenant.projectId));
      expect(error).to.be.instanceOf(CoreApiError).with.property('status', 401);
      expect(log).to.have.length(1);
    });
  });

  // The embedded store cannot be taken down under a running gateway; the server can.
  if (store === 'clickhouse-server') describe('retries', () => {
    it('rides through a store outage: calls made while it is down succeed once it is back', async function () {
      const server = (await clickhouseServer()).server;
      if (server === undefined) {
        console.log('      an external ClickHouse server is not ours to break: TEST_INFRA=external skips this by choice');
        this.skip();
      }
      const tenant = gw.tenant();
      const log: Observed[] = [];
      // Enough tries (about a second apart, as the gateway's Retry-After asks) to outlast a restart of the server.
      const client = clientFor(tenant, { fetch: observing(log), retry: { attempts: 60 } });
      const [fleetId, deviceId] = [uuid(), uuid()];
      const before = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, occurred_at: '2026-01-01T00:00:00Z' });
      await gw.seed([before]);

      await server.takeDown();
      const enrolling = client.devices.enroll(tenant.projectId, fleetId, deviceId, { display_name: 'During outage' });
      const reading = collect(client.events.list(tenant.projectId, { limit: 10 }));
      // Awaited only after the server is back; a failure must not surface as an unhandled rejection first.
      enrolling.catch(() => undefined);
      reading.catch(() => undefined);
      try {
        await waitFor(
          'both calls to have been answered 503',
          async () => (['POST', 'GET'].every((m) => log.some((o) => o.method === m && o.status === 503)) ? true : undefined),
          30_000,
          20,
        );
      } finally {
        await server.bringBack();
      }

      const enrolled = await enrolling;
      const events = await reading;
      expect(enrolled).to.deep.include({ status: 'queued', device_id: deviceId, display_name: 'During outage' });
      // Both calls retry on their own: the read may be answered after the enrollment's event is
      // stored (it was, against a ClickHouse container, whose restart is slower than a process's).
      expect(events.map((e) => e.id)).to.include(before.id);
      expect(events.filter((e) => e.id !== before.id).map((e) => e.correlation_id)).to.satisfy((ids: string[]) => ids.every((id) => id === enrolled.enrollment_id));

      const posts = log.filter((o) => o.method === 'POST');
      expect(posts.at(-1)!.status).to.equal(202);
      expect(posts.slice(0, -1).every((o) => o.status === 503)).to.equal(true);
      expect(new Set(posts.map((o) => o.idempotencyKey)).size, 'one Idempotency-Key on every try').to.equal(1);
      const gets = log.filter((o) => o.method === 'GET');
      expect(gets.at(-1)!.status).to.equal(200);

      // The key the retries carried names the enrollment: asking again gives the same one, and the feed shows it once.
      const again = await client.devices.enroll(tenant.projectId, fleetId, deviceId, { display_name: 'During outage' }, { idempotencyKey: posts[0]!.idempotencyKey! });
      expect(again.enrollment_id).to.equal(enrolled.enrollment_id);
      const enrollments = await waitFor('the enrollment in the feed', async () => {
        const found = await collect(client.events.list(tenant.projectId, { device_id: deviceId }));
        return found.length > 0 ? found : undefined;
      });
      expect(enrollments.map((e) => e.correlation_id)).to.deep.equal([enrolled.enrollment_id]);
    });
  });
});
