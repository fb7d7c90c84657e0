import { expect } from 'chai';
import fc from 'fast-check';
import { KEPT_PAGES_HELD, KEPT_PAGES_READ } from '../../../src/feed/pages/feed-service.js';
import { compareFeedOrder, mergeWritten } from '../../../src/feed/first-page-cache/first-page-merge.js';
import { pageAfterKept } from '../../../src/feed/first-page-cache/page-after-kept.js';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import type { EventStore, FeedFilters, FeedQuery } from '../../../src/store/event-store.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent, microsFrom, uuid } from '../../support/factories.js';
import { describeOnEachStore } from './gateways.js';

/** The store's clock for its page windows: every event lies in the seconds before it, where the first window reads. */
const NOW = Date.parse('2026-03-01T00:00:10Z');
/** Few instants a microsecond or a second apart, so that many events share one and the engine's order of their ids decides. */
const INSTANTS = [microsFrom('2026-03-01T00:00:05Z'), microsFrom('2026-03-01T00:00:05Z', 1), microsFrom('2026-03-01T00:00:06Z'), microsFrom('2026-03-01T00:00:09Z')];
const DEVICES = [uuid(), uuid()];
const FLEETS = [uuid(), uuid()];
/** Past any ingested_at of this run: the window of the writes ends after all of them. */
const END_OF_TIME = '2299-01-01 00:00:00.000';

/** An event of the project as a producer sends it; `copyOf` repeats an earlier one (a redelivery), `sameIdAs` reuses its id at another instant. */
type Spec = { instant: number; domain: number; device: number; fleet: number; copyOf?: number | undefined; sameIdAs?: number | undefined };
const spec: fc.Arbitrary<Spec> = fc.record({
  // Most at one instant: their order is the engine's order of their ids.
  instant: fc.oneof(fc.constant(0), fc.constant(0), fc.nat(INSTANTS.length - 1)),
  domain: fc.nat(1),
  device: fc.nat(2),
  fleet: fc.nat(1),
  copyOf: fc.option(fc.nat(20), { nil: undefined }),
  sameIdAs: fc.option(fc.nat(20), { nil: undefined }),
});
/** No filter, or one: a page with several holds too few events to say much. */
const filters: fc.Arbitrary<FeedFilters> = fc.oneof(
  fc.constant({}),
  fc.constantFrom('telemetry', 'devices').map((domain) => ({ domain })),
  fc.constantFrom(...DEVICES).map((deviceId) => ({ deviceId })),
  fc.constantFrom(...FLEETS).map((fleetId) => ({ fleetId })),
  fc.constantFrom(...INSTANTS.map(toStoreTimestamp)).map((since) => ({ since })),
  fc.constantFrom(...INSTANTS.map(toStoreTimestamp)).map((until) => ({ until })),
);

/** The events the specs describe, in order, for one project: each copy and reused id refers to an event before it. */
function eventsOf(specs: readonly Spec[], project: Pick<CanonicalEvent, 'org_id' | 'project_id'>, earlier: CanonicalEvent[]): CanonicalEvent[] {
  const made: CanonicalEvent[] = [];
  for (const s of specs) {
    const before = [...earlier, ...made];
    if (s.copyOf !== undefined && before.length > 0) {
      made.push(before[s.copyOf % before.length]!);
      continue;
    }
    // One id at another instant is another event; at the same instant with other fields it
    // would be a copy that differs, which the store may show either way.
    const same = s.sameIdAs !== undefined && before.length > 0 ? before[s.sameIdAs % before.length]!.id : undefined;
    const free = INSTANTS.find((at) => !before.some((e) => e.id === same && e.occurred_at === at));
    const [id, instant] = same !== undefined && free !== undefined ? [same, free] : [uuid(), INSTANTS[s.instant]!];
    made.push(
      canonicalEvent({
        ...project,
        id,
        occurred_at: instant,
        domain: ['telemetry', 'devices'][s.domain]!,
        device_id: s.device === 2 ? null : DEVICES[s.device]!,
        fleet_id: FLEETS[s.fleet]!,
      }),
    );
  }
  return made;
}

describeOnEachStore('first pages brought up to date with what was written equal a read of the store', (gateway) => {
  let sql: SqlTransport;
  let store: EventStore;

  before(async () => {
    sql = await openStore((await gateway()).config);
    store = createClickHouseEventStore(sql, { now: () => NOW });
  });

  after(async () => {
    await sql.close();
  });

  it("orders events at one instant as the engine orders their ids", async () => {
    const project = { org_id: uuid(), project_id: uuid() };
    await store.insertEvents(Array.from({ length: 40 }, () => storableEvent(canonicalEvent({ ...project, occurred_at: INSTANTS[0]! }))));
    const page = await store.listEvents({ orgId: project.org_id, projectId: project.project_id, filters: {}, after: undefined, limit: 41 });
    expect(page.events).to.have.length(40);
    const positions = page.events.map((e) => e.position);
    expect([...positions].sort((a, b) => compareFeedOrder(b, a))).to.deep.equal(positions);
  });

  it('for random histories, writes after the page (copies, one id at two instants, many events at one instant), filters and page sizes', async () => {
    let compared = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(spec, { maxLength: 10 }), fc.array(spec, { minLength: 1, maxLength: 10 }), fc.nat(9), filters, fc.integer({ min: 1, max: 6 }), async (seenSpecs, writtenSpecs, split, f, limit) => {
        const project = { org_id: uuid(), project_id: uuid() };
        const seen = eventsOf(seenSpecs, project, []);
        const written = eventsOf(writtenSpecs, project, seen);
        const query: FeedQuery = { orgId: project.org_id, projectId: project.project_id, filters: f, after: undefined, limit };
        if (seen.length > 0) await store.insertEvents(seen.map(storableEvent));
        // Rows ingested from here on are the writes' (and maybe the seed's last millisecond, which the page holds).
        const from = await store.tailHorizon(0);
        const page = await store.listEvents(query);
        // Two inserts: a copy may land in another part than its original.
        const cut = split % written.length;
        for (const part of [written.slice(0, cut), written.slice(cut)]) if (part.length > 0) await store.insertEvents(part.map(storableEvent));
        const window = await store.writtenEvents(from, END_OF_TIME, 100_000);
        expect(window, 'the window of the writes, read in full').to.not.equal(undefined);
        const merged = mergeWritten(query, page, window!);
        const fresh = await store.listEvents(query);
        // A page that stopped at its bound on work is merged above that point only (unit tests cover it); none is expected here.
        expect(page.resumeAfter, 'every event lies in the first window').to.equal(undefined);
        expect(merged?.events.map((e) => e.position), 'the order of positions').to.deep.equal(fresh.events.map((e) => e.position));
        expect(merged?.events).to.deep.equal(fresh.events);
        expect(merged?.resumeAfter).to.deep.equal(fresh.resumeAfter);
        compared += 1;
      }),
      { numRuns: 25 },
    );
    expect(compared).to.equal(25);
  });

  it('the page after a kept first page, cut from it once brought up to date, equals a read of the store from the cursor', async () => {
    let cut = 0;
    // Mostly no filter, and enough distinct events for two pages of three and the one past
    // them (a third of the seed's specs copies at most): most runs cut a page.
    const mostlyWhole = fc.oneof({ weight: 3, arbitrary: fc.constant<FeedFilters>({}) }, { weight: 1, arbitrary: filters });
    const seedSpec = fc.oneof({ weight: 2, arbitrary: spec.map((s) => ({ ...s, copyOf: undefined })) }, { weight: 1, arbitrary: spec });
    await fc.assert(
      fc.asyncProperty(fc.array(seedSpec, { minLength: 7, maxLength: 14 }), fc.array(spec, { maxLength: 8 }), mostlyWhole, fc.integer({ min: 1, max: 3 }), async (seenSpecs, writtenSpecs, f, limit) => {
        const project = { org_id: uuid(), project_id: uuid() };
        const seen = eventsOf(seenSpecs, project, []);
        const written = eventsOf(writtenSpecs, project, seen);
        // Kept as the feed keeps first pages: read two pages deep, held to three once brought up to date (src/feed/pages/feed-service.ts).
        const kept: FeedQuery = { orgId: project.org_id, projectId: project.project_id, filters: f, after: undefined, limit: KEPT_PAGES_READ * limit + 1 };
        await store.insertEvents(seen.map(storableEvent));
        const from = await store.tailHorizon(0);
        const read = await store.listEvents(kept);
        if (read.events.length <= limit) return;
        // The cursor the first page gave out, before anything was written.
        const cursor = read.events[limit - 1]!.position;
        if (written.length > 0) await store.insertEvents(written.map(storableEvent));
        const window = await store.writtenEvents(from, END_OF_TIME, 100_000);
        const merged = mergeWritten(kept, read, window!, KEPT_PAGES_HELD * limit + 1)!;
        const page = pageAfterKept(merged, cursor, limit + 1, kept.limit);
        if (page === undefined) return;
        const fresh = await store.listEvents({ ...kept, after: cursor, limit: limit + 1 });
        expect(page.events).to.deep.equal(fresh.events);
        expect(page.resumeAfter).to.deep.equal(fresh.resumeAfter);
        cut += 1;
      }),
      { numRuns: 25 },
    );
    expect(cut, 'pages cut from a kept page and compared: most runs').to.be.at.least(5);
  });
});
