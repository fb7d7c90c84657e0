import { expect } from 'chai';
import fc from 'fast-check';
import type { CanonicalEvent, CanonicalEventPageResponse, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { openEventStream } from '../../support/sse-reader.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

/**
 * Tenant isolation as a property: organizations that reuse the very same project, device
 * and fleet uuids (and even the same event ids at the same instants, so their keyset
 * positions coincide) never see one another's events, whatever the filters, page size or
 * cursor. FUZZ_RUNS scales the cases (npm run fuzz: 10,000 gives 1,000 per store).
 */
const runs = process.env['FUZZ_RUNS'] === undefined ? 100 : Math.max(1, Math.ceil(Number(process.env['FUZZ_RUNS']) / 10));
const seed = process.env['FUZZ_SEED'] === undefined ? undefined : Number(process.env['FUZZ_SEED']);

const ORGS = 3;
const EVENTS_PER_PROJECT = 12;
const BASE = Date.parse('2026-03-01T00:00:00Z');
const at = (minute: number) => new Date(BASE + minute * 60_000).toISOString();

const DOMAINS = ['alpha', 'beta', 'gamma'] as const;
const ENTITIES = ['door', 'pump', 'valve'] as const;
const ACTIONS = ['opened', 'closed'] as const;
// Bounds inside, at and around the seeded minutes, so ranges cut the series in every way.
const BOUNDS = [at(-5), at(0), at(3), at(5.5), at(8), at(11), at(30)] as const;

/** The filters of one request, as the query names them; absent means unset. */
interface Filters {
  readonly domain?: string;
  readonly entity?: string;
  readonly action?: string;
  readonly device_id?: string;
  readonly fleet_id?: string;
  readonly since?: string;
  readonly until?: string;
}

interface IssuedCursor {
  readonly org: number;
  readonly project: number;
  readonly filters: Filters;
  readonly cursor: string;
}

const query = (filters: Filters, limit: number | undefined, cursor: string | undefined): string => {
  const params = new URLSearchParams(Object.entries(filters) as [string, string][]);
  if (limit !== undefined) params.set('limit', String(limit));
  if (cursor !== undefined) params.set('cursor', cursor);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
};

/** Equal filter sets give equal text whatever the order they were built in. */
const filterKey = (f: Filters): string => JSON.stringify(Object.entries(f).sort(([a], [b]) => a.localeCompare(b)));

/** An event as the feed serves it: the store keeps microseconds and prints all six digits. */
const served = (e: CanonicalEvent): CanonicalEvent => ({ ...e, occurred_at: e.occurred_at.replace(/\.(\d{3})Z$/, '.$1000Z') });

function matches(e: CanonicalEvent, f: Filters): boolean {
  return (
    (f.domain === undefined || e.domain === f.domain) &&
    (f.entity === undefined || e.entity === f.entity) &&
    (f.action === undefined || e.action === f.action) &&
    (f.device_id === undefined || e.device_id === f.device_id) &&
    (f.fleet_id === undefined || e.fleet_id === f.fleet_id) &&
    (f.since === undefined || Date.parse(e.occurred_at) >= Date.parse(f.since)) &&
    (f.until === undefined || Date.parse(e.occurred_at) < Date.parse(f.until))
  );
}

describeOnEachStore('tenant isolation: organizations sharing every id never see each other', (gateway) => {
  let gw: TestGateway;
  let orgs: Tenant[];
  // Shared by every organization: the same uuids name different things in each.
  const projects = [uuid(), uuid()] as const;
  const devices = [uuid(), uuid(), uuid()] as const;
  const fleets = [uuid(), uuid(), uuid()] as const;
  const seeded = new Map<string, CanonicalEvent[]>();
  const pool: IssuedCursor[] = [];
  const seededOf = (org: number, project: number) => seeded.get(`${org}/${project}`) ?? [];

  const page = async (org: number, project: number, q: string, headers?: Record<string, string>) =>
    gw.call<CanonicalEventPageResponse | ErrorEnvelope>('GET', `/projects/${projects[project]}/events${q}`, { headers: headers ?? (await orgs[org]!.headers()) });

  before(async () => {
    gw = await gateway();
    orgs = Array.from({ length: ORGS }, () => gw.tenant());
    // One series of ids reused by every organization and project, at the same minutes.
    const ids = Array.from({ length: EVENTS_PER_PROJECT }, () => uuid());
    for (let org = 0; org < ORGS; org++) {
      for (let project = 0; project < projects.length; project++) {
        const series = ids.map((id, i) =>
          canonicalEvent({
            id,
            org_id: orgs[org]!.orgId,
            project_id: projects[project],
            // The last domain is never seeded, so a filter on it must come back empty.
            domain: DOMAINS[i % 2]!,
            entity: ENTITIES[i % 3]!,
            action: ACTIONS[Math.floor(i / 2) % 2]!,
            device_id: devices[Math.floor(i / 3) % 2]!,
            fleet_id: fleets[Math.floor(i / 6) % 2]!,
            occurred_at: at(i),
            payload: { org, project, i },
          }),
        );
        seeded.set(`${org}/${project}`, series);
        // A batch of its own: ingest writes one copy of an id per batch, and a tenant that
        // reuses another's event ids must still get its own events stored and served.
        await gw.seed(series);
      }
    }

    // Cursors from the second page of several queries of every organization and project.
    const issuing: Filters[] = [{}, { domain: 'alpha' }, { device_id: devices[0] }, { fleet_id: fleets[1], since: at(3) }, { entity: 'pump', until: at(11) }];
    for (let org = 0; org < ORGS; org++) {
      for (let project = 0; project < projects.length; project++) {
        for (const filters of issuing) {
          const res = await page(org, project, query(filters, 1, undefined));
          expect(res.status, res.text).to.equal(200);
          const cursor = (res.body as CanonicalEventPageResponse).meta.next_cursor;
          if (cursor === null) throw new Error(`the seeded feed should have a second page for ${JSON.stringify(filters)}: ${res.text}`);
          pool.push({ org, project, filters, cursor });
        }
      }
    }
  });

  const optional = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined, freq: 2 });
  const filtersArb: fc.Arbitrary<Filters> = fc
    .record({
      domain: optional(fc.constantFrom(...DOMAINS)),
      entity: optional(fc.constantFrom(...ENTITIES)),
      action: optional(fc.constantFrom(...ACTIONS)),
      device_id: optional(fc.constantFrom(...devices)),
      fleet_id: optional(fc.constantFrom(...fleets)),
      since: optional(fc.constantFrom(...BOUNDS)),
      until: optional(fc.constantFrom(...BOUNDS)),
    })
    .map((f) => Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as Filters);

  const requestArb = fc.record({
    caller: fc.nat(ORGS - 1),
    project: fc.nat(projects.length - 1),
    filters: filtersArb,
    limit: optional(fc.integer({ min: 1, max: 5 })),
    // Replay a cursor: in its own scope (the caller may still be another organization), or under the generated one.
    cursor: optional(fc.record({ index: fc.nat(ORGS * projects.length * 5 - 1), ownScope: fc.boolean() })),
    // Send another organization's id in ORG-ID, which the token does not list.
    foreignOrgHeader: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, fc.nat(ORGS - 1)),
  });

  it(`returns only the caller's organization and project, and refuses foreign cursors: ${runs} cases`, async function () {
    this.timeout(runs * 1000 + 60_000);
    await fc.assert(
      fc.asyncProperty(requestArb, async (r) => {
        const issued = r.cursor === undefined ? undefined : pool[r.cursor.index % pool.length]!;
        const own = issued !== undefined && r.cursor?.ownScope === true;
        const project = own ? issued.project : r.project;
        const filters = own ? issued.filters : r.filters;
        const q = query(filters, r.limit, issued?.cursor);

        if (r.foreignOrgHeader !== undefined && r.foreignOrgHeader !== r.caller) {
          const headers = await orgs[r.caller]!.headers({ orgHeader: orgs[r.foreignOrgHeader]!.orgId });
          const res = await page(r.caller, project, q, headers);
          expect(res.status, res.text).to.equal(403);
          expect(res.body.ok).to.equal(0);
          return;
        }

        const res = await page(r.caller, project, q);
        const sameScope = issued !== undefined && issued.org === r.caller && issued.project === project && filterKey(issued.filters) === filterKey(filters);
        if (issued !== undefined && !sameScope) {
          expect(res.status, `a cursor of org ${issued.org} replayed by org ${r.caller}: ${res.text}`).to.equal(400);
          expect(res.body).to.have.nested.property('message.query\\.cursor');
          return;
        }
        expect(res.status, res.text).to.equal(200);
        const expected = seededOf(r.caller, project).filter((e) => matches(e, filters));
        const expectedById = new Map(expected.map((e) => [e.id, served(e)]));
        const items = (res.body as CanonicalEventPageResponse).data.items;
        for (const item of items) {
          expect(item.org_id, 'org of a returned event').to.equal(orgs[r.caller]!.orgId);
          expect(item.project_id, 'project of a returned event').to.equal(projects[project]);
          // The id alone is shared by every tenant; the whole event must be this tenant's.
          expect(item, 'a returned event').to.deep.equal(expectedById.get(item.id));
        }
        if (issued === undefined) expect(items).to.have.length(Math.min(r.limit ?? Infinity, expected.length));
      }),
      { numRuns: runs, ...(seed === undefined ? {} : { seed }) },
    );
  });

  it('refuses every cursor of one organization under each other one, in the very same scope', async () => {
    for (const issued of pool) {
      for (let caller = 0; caller < ORGS; caller++) {
        if (caller === issued.org) continue;
        const res = await page(caller, issued.project, query(issued.filters, 1, issued.cursor));
        expect(res.status, res.text).to.equal(400);
      }
    }
  });

  it("answers 403 to a live tail whose ORG-ID the token does not list, and tails only the caller's organization", async () => {
    const [a, b] = [orgs[0]!, orgs[1]!];
    const path = `${gw.baseUrl}/projects/${projects[0]}/events/stream`;
    const refused = await openEventStream(path, await a.headers({ orgHeader: b.orgId }));
    expect(refused.status).to.equal(403);

    const res = await openEventStream(path, await a.headers());
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const stream = res.stream!;
    try {
      const now = new Date().toISOString();
      // Same id, instant, project, device and fleet: only the organization differs.
      const shared = { id: uuid(), project_id: projects[0], device_id: devices[0], fleet_id: fleets[0], occurred_at: now, domain: 'tail' };
      const foreign = canonicalEvent({ ...shared, org_id: b.orgId, payload: { owner: 'b' } });
      const mine = canonicalEvent({ ...shared, org_id: a.orgId, payload: { owner: 'a' } });
      await gw.seed([foreign]);
      await gw.seed([mine]);
      const isMine = (data: string) => (JSON.parse(data) as CanonicalEvent).payload?.['owner'] === 'a';
      await stream.until("the caller's own event", (s) => s.messages.some((m) => m.data !== '' && isMine(m.data)), 20_000);
      for (const message of stream.messages) {
        if (message.data === '') continue;
        expect((JSON.parse(message.data) as CanonicalEvent).org_id, 'org of a tailed event').to.equal(a.orgId);
      }
    } finally {
      await stream.close();
    }
  });
});
