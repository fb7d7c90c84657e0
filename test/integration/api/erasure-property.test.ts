import { expect } from 'chai';
import fc from 'fast-check';
import { encodeTailPosition } from '../../../src/feed/tail/tail-position.js';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { NIL_UUID } from '../../../src/ids/uuid.js';
import { runErasure } from '../../../src/store/erasure-run.js';
import { scopeCovers, type ErasureScope } from '../../../src/store/erasure-scope.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { openEventStream, type SseStream } from '../../support/sse-reader.js';
import { skipUnlessServerStoreTested, storeEnvironment } from '../../support/stores.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { clickhouseServer, describeOnEachStore, ERASURE_ENV, LIVE_TAIL_ENV } from './gateways.js';

/** Runs per gateway (ERASURE_PROPERTY_RUNS for more): each seeds a history, reads before, erases (four poll intervals of waiting) and reads after; about 5 s a run. */
const RUNS = Number(process.env['ERASURE_PROPERTY_RUNS'] ?? 5);
const DAY_MS = 86_400_000;
const DOMAINS = ['telemetry', 'ota'] as const;

type EventSpec = { project: number; device: number; day: number; domain: number };
type ScopeSpec = { kind: 'org' } | { kind: 'project'; project: number } | { kind: 'device'; device: number; inProject: number | undefined };
/** A read of the feed or the tail; `before` takes its cursor or ETag before the erasure, and reads on after it. */
type ReadSpec =
  | { kind: 'walk'; project: number; limit: number; filter: 'none' | 'device' | 'domain'; device: number; before: boolean; pagesBefore: number }
  | { kind: 'etag'; project: number; limit: number }
  | { kind: 'resume'; project: number };

const eventSpec: fc.Arbitrary<EventSpec> = fc.record({ project: fc.nat(1), device: fc.nat(3), day: fc.nat(120), domain: fc.nat(1) });
const scopeSpec: fc.Arbitrary<ScopeSpec> = fc.oneof(
  fc.constant({ kind: 'org' as const }),
  fc.record({ kind: fc.constant('project' as const), project: fc.nat(1) }),
  fc.record({ kind: fc.constant('device' as const), device: fc.nat(2), inProject: fc.option(fc.nat(1), { nil: undefined }) }),
);
const readSpec: fc.Arbitrary<ReadSpec> = fc.oneof(
  fc.record({
    kind: fc.constant('walk' as const),
    project: fc.nat(1),
    limit: fc.integer({ min: 1, max: 30 }),
    filter: fc.constantFrom('none' as const, 'device' as const, 'domain' as const),
    device: fc.nat(2),
    before: fc.boolean(),
    pagesBefore: fc.nat(3),
  }),
  fc.record({ kind: fc.constant('etag' as const), project: fc.nat(1), limit: fc.integer({ min: 1, max: 60 }) }),
  fc.record({ kind: fc.constant('resume' as const), project: fc.nat(1) }),
);

/** The property on one gateway: each run a tenant of its own, a history, a scope erased, reads before and after. */
function erasedStaysErased(gateway: () => TestGateway): Promise<void> {
  const gw = gateway();
  return fc.assert(
    fc.asyncProperty(fc.array(eventSpec, { minLength: 1, maxLength: 40 }), scopeSpec, fc.array(readSpec, { minLength: 1, maxLength: 4 }), async (specs, scopeOf, reads) => {
      const tenant: Tenant = gw.tenant();
      const headers = await tenant.headers();
      const projects = [tenant.projectId, uuid()];
      // Device 3 stands for an event that names none.
      const devices = [uuid(), uuid(), uuid()];
      const now = Date.now();
      const events: CanonicalEvent[] = specs.map((s, i) =>
        canonicalEvent({
          org_id: tenant.orgId,
          project_id: projects[s.project]!,
          device_id: s.device === 3 ? null : devices[s.device]!,
          domain: DOMAINS[s.domain]!,
          occurred_at: new Date(now - s.day * DAY_MS - i).toISOString(),
        }),
      );
      await gw.seed(events);
      const scope: ErasureScope =
        scopeOf.kind === 'org'
          ? { orgId: tenant.orgId }
          : scopeOf.kind === 'project'
            ? { orgId: tenant.orgId, projectId: projects[scopeOf.project]! }
            : { orgId: tenant.orgId, deviceId: devices[scopeOf.device]!, projectId: scopeOf.inProject === undefined ? undefined : projects[scopeOf.inProject]! };
      const erased = new Set(events.filter((e) => scopeCovers(scope, e)).map((e) => e.id));

      const page = (project: number, query: string, extra: Record<string, string> = {}) =>
        gw.call<CanonicalEventPageResponse>('GET', `/projects/${projects[project]!}/events${query}`, { headers: { ...headers, ...extra } });
      const queryOf = (r: Extract<ReadSpec, { kind: 'walk' }>) =>
        `?limit=${r.limit}${r.filter === 'device' ? `&device_id=${devices[r.device]!}` : r.filter === 'domain' ? '&domain=ota' : ''}`;

      // What each read takes before the erasure: a cursor some pages in, a first page's ETag and items.
      const taken = await Promise.all(
        reads.map(async (r) => {
          if (r.kind === 'etag') {
            const res = await page(r.project, `?limit=${r.limit}`);
            return { etag: res.headers.get('etag')!, items: res.body.data.items.map((e) => e.id) };
          }
          if (r.kind === 'walk' && r.before) {
            let cursor: string | null = null;
            for (let k = 0; k < r.pagesBefore; k++) {
              const res: { body: CanonicalEventPageResponse } = await page(r.project, `${queryOf(r)}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
              cursor = res.body.meta.next_cursor;
              if (cursor === null) break;
            }
            return { cursor };
          }
          return {};
        }),
      );

      const outcome = await runErasure({ scope, requestedBy: 'ops:property', reason: '' }, { store: gw.runtime.erasure.store, settings: gw.config.erasure });
      expect(outcome.record.eventsRemoved).to.equal(erased.size);

      for (const [k, r] of reads.entries()) {
        const shown: string[] = [];
        if (r.kind === 'walk') {
          let cursor = taken[k]!.cursor ?? null;
          // A cursor that ended the walk before the erasure has nothing more to read.
          if (!(r.before && r.pagesBefore > 0 && cursor === null)) {
            do {
              const res: { status: number; body: CanonicalEventPageResponse } = await page(r.project, `${queryOf(r)}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
              expect(res.status).to.equal(200);
              shown.push(...res.body.data.items.map((e) => e.id));
              cursor = res.body.meta.next_cursor;
            } while (cursor !== null);
          }
          if (!r.before || r.pagesBefore === 0) {
            // A whole walk from the first page: every event the scope leaves, of the project and the filter.
            const kept = events.filter(
              (e) =>
                !erased.has(e.id) &&
                e.project_id === projects[r.project] &&
                (r.filter !== 'device' || e.device_id === devices[r.device]) &&
                (r.filter !== 'domain' || e.domain === 'ota'),
            );
            expect(shown, 'a walk after the erasure').to.have.members(kept.map((e) => e.id));
          }
        } else if (r.kind === 'etag') {
          const res = await page(r.project, `?limit=${r.limit}`, { 'if-none-match': taken[k]!.etag! });
          // Not modified only when the page held nothing erased; what it held is what the client keeps.
          if (res.status === 304) shown.push(...taken[k]!.items!);
          else shown.push(...res.body.data.items.map((e) => e.id));
        } else {
          // Last-Event-ID at the very start of the tail: every row of the project the store still holds is read again.
          const opened = await openEventStream(`${gw.baseUrl}/projects/${projects[r.project]!}/events/stream`, {
            ...headers,
            'last-event-id': encodeTailPosition({ ingestedAt: '2000-01-01 00:00:00.000', id: NIL_UUID }),
          });
          expect(opened.status).to.equal(200);
          const stream: SseStream = opened.stream!;
          try {
            const kept = events.filter((e) => !erased.has(e.id) && e.project_id === projects[r.project]);
            await stream.until('the kept events and two heartbeats', (s) => s.messages.length >= kept.length && s.comments.filter((c) => c.startsWith('heartbeat')).length >= 2);
            shown.push(...stream.messages.map((m) => (JSON.parse(m.data) as CanonicalEvent).id));
            expect(shown).to.include.members(kept.map((e) => e.id));
          } finally {
            await stream.close();
          }
        }
        expect(shown.filter((id) => erased.has(id)), `${JSON.stringify(r)} after erasing ${JSON.stringify(scopeOf)}`).to.deep.equal([]);
      }
    }),
    { numRuns: RUNS },
  );
}

describeOnEachStore('erasure, as a property: no read path shows an erased event again', (gateway) => {
  let gw: TestGateway;

  before(async () => {
    gw = await gateway();
  });

  it(`for random histories, scopes and read paths (${RUNS} runs): nothing erased is read, and everything else still is`, async function () {
    this.timeout(60_000 + RUNS * 30_000);
    await erasedStaysErased(() => gw);
  });
});

/**
 * The same on a gateway that keeps first pages (as production does by default,
 * FEED_FIRST_PAGE_MAX_AGE_MS): a page kept before the erasure, and the page by cursor cut
 * from it, must not outlive it. chDB's directory belongs to the shared gateway's process,
 * so this one runs on the server.
 */
describe('erasure, as a property, where first pages are kept [clickhouse-server]', function () {
  let gw: TestGateway | undefined;

  before(async function () {
    skipUnlessServerStoreTested(this);
    this.timeout(120_000);
    gw = await startTestGateway({
      ...storeEnvironment('clickhouse-server', (await clickhouseServer()).url),
      ...LIVE_TAIL_ENV,
      ...ERASURE_ENV,
      FEED_FIRST_PAGE_MAX_AGE_MS: '300000',
    });
  });

  after(async () => {
    await gw?.close();
  });

  it(`for random histories, scopes and read paths (${RUNS} runs): nothing erased is read from a kept page either`, async function () {
    this.timeout(60_000 + RUNS * 30_000);
    await erasedStaysErased(() => gw!);
  });
});
