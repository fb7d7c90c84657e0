import { expect } from 'chai';
import fc from 'fast-check';
import { compareFeedOrder, mergeWritten } from '../../../../src/feed/first-page-cache/first-page-merge.js';
import type { FeedFilters, FeedPosition, FeedQuery, FeedSlice, StoredEvent } from '../../../../src/store/event-store.js';
import { canonicalEvent, uuid } from '../../../support/factories.js';

const ORG = uuid();
const PROJECT = uuid();
const OTHER_PROJECT = uuid();
const DEVICES = [uuid(), uuid()];
const FLEETS = [uuid(), uuid()];
/** Few instants and few ids, so that histories hold events at one instant, copies, and one id at two instants. */
const INSTANTS = ['2026-11-26 10:00:00.000000', '2026-11-26 10:00:00.000001', '2026-11-26 10:00:01.000000', '2026-11-26 10:00:02.500000'];
const IDS = ['00000000-0000-0000-0000-000000000001', 'ffffffff-ffff-ffff-0000-000000000000', '00000001-0000-0000-0000-000000000000', uuid(), uuid(), uuid()];

/** ClickHouse's UUID order, written another way than the code's: the second 64-bit half as a number, then the first. */
function referenceIdOrder(a: string, b: string): number {
  const halves = (id: string) => {
    const hex = id.replace(/-/g, '');
    return [BigInt(`0x${hex.slice(16)}`), BigInt(`0x${hex.slice(0, 16)}`)] as const;
  };
  const [[al, ah], [bl, bh]] = [halves(a), halves(b)];
  if (al !== bl) return al < bl ? -1 : 1;
  return ah === bh ? 0 : ah < bh ? -1 : 1;
}

const newestFirst = (a: StoredEvent, b: StoredEvent) =>
  a.position.occurredAt !== b.position.occurredAt ? (a.position.occurredAt < b.position.occurredAt ? 1 : -1) : -referenceIdOrder(a.position.id, b.position.id);
const above = (floor: FeedPosition | undefined) => (e: StoredEvent) =>
  floor === undefined || e.position.occurredAt > floor.occurredAt || (e.position.occurredAt === floor.occurredAt && referenceIdOrder(e.position.id, floor.id) > 0);

function matches(f: FeedFilters, e: StoredEvent): boolean {
  return (
    (f.domain === undefined || e.event.domain === f.domain) &&
    (f.entity === undefined || e.event.entity === f.entity) &&
    (f.action === undefined || e.event.action === f.action) &&
    (f.deviceId === undefined || e.event.device_id === f.deviceId) &&
    (f.fleetId === undefined || e.event.fleet_id === f.fleetId) &&
    (f.since === undefined || e.position.occurredAt >= f.since) &&
    (f.until === undefined || e.position.occurredAt < f.until)
  );
}

/** The page a read of `history` answers, as the store answers it: the project's, filtered, each (occurred_at, id) once, newest first, at most `limit`. */
function readPage(history: readonly StoredEvent[], query: FeedQuery, floor?: FeedPosition): StoredEvent[] {
  const seen = new Set<string>();
  return history
    .filter((e) => e.event.project_id === query.projectId && matches(query.filters, e) && above(floor)(e))
    .sort(newestFirst)
    .filter((e) => {
      const key = `${e.position.occurredAt}/${e.position.id}`;
      return seen.has(key) ? false : (seen.add(key), true);
    })
    .slice(0, query.limit);
}

/** A stored event, as the store reads one back. */
const stored = (fields: { instant: string; id: string; project: string; domain: string; entity: string; action: string; device: string | null; fleet: string | null }): StoredEvent => ({
  event: canonicalEvent({ id: fields.id, org_id: ORG, project_id: fields.project, domain: fields.domain, entity: fields.entity, action: fields.action, device_id: fields.device, fleet_id: fields.fleet }),
  position: { occurredAt: fields.instant, id: fields.id },
});

const storedEvent = fc
  .record({
    instant: fc.constantFrom(...INSTANTS),
    id: fc.constantFrom(...IDS),
    project: fc.constantFrom(PROJECT, PROJECT, PROJECT, OTHER_PROJECT),
    domain: fc.constantFrom('device', 'fleet'),
    entity: fc.constantFrom('reading', 'enrollment'),
    action: fc.constantFrom('recorded', 'queued'),
    device: fc.constantFrom(null, ...DEVICES),
    fleet: fc.constantFrom(null, ...FLEETS),
  })
  .map(stored);
const history = fc.array(storedEvent, { maxLength: 12 });
const filters: fc.Arbitrary<FeedFilters> = fc.record(
  {
    domain: fc.constantFrom('device', 'fleet'),
    entity: fc.constantFrom('reading', 'enrollment'),
    action: fc.constantFrom('recorded', 'queued'),
    deviceId: fc.constantFrom(...DEVICES),
    fleetId: fc.constantFrom(...FLEETS),
    since: fc.constantFrom(...INSTANTS),
    until: fc.constantFrom(...INSTANTS),
  },
  { requiredKeys: [] },
);
const firstPageQuery = fc.record({ filters, limit: fc.integer({ min: 1, max: 6 }) }).map(({ filters: f, limit }): FeedQuery => ({ orgId: ORG, projectId: PROJECT, filters: f, after: undefined, limit }));
const floorPosition = fc.record({ occurredAt: fc.constantFrom(...INSTANTS), id: fc.constantFrom('00000000-0000-0000-0000-000000000000', ...IDS) });

describe('first pages brought up to date with what was written', () => {
  it("orders ids as ClickHouse orders UUIDs (measured with ORDER BY on the engine), not as their text", () => {
    const ascending = ['00000000-0000-0001-0000-000000000000', '00000001-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-0000-000000000000', '00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000100'];
    const at = (id: string) => ({ occurredAt: INSTANTS[0]!, id });
    for (let i = 1; i < ascending.length; i += 1) expect(compareFeedOrder(at(ascending[i]!), at(ascending[i - 1]!)), `${ascending[i]} after ${ascending[i - 1]}`).to.equal(1);
    expect(compareFeedOrder(at(ascending[0]!.toUpperCase()), at(ascending[0]!))).to.equal(0);
    fc.assert(fc.property(fc.uuid(), fc.uuid(), (a, b) => Math.sign(compareFeedOrder(at(a), at(b))) === referenceIdOrder(a, b)));
  });

  it('gives the page a read of the whole history would give, for a page read in full and any events written after it, copies and other projects included', () => {
    fc.assert(
      fc.property(history, history, firstPageQuery, (seen, written, query) => {
        const page: FeedSlice = { events: readPage(seen, query) };
        const merged = mergeWritten(query, page, written);
        expect(merged?.events).to.deep.equal(readPage([...seen, ...written], query));
        expect(merged?.resumeAfter).to.equal(undefined);
      }),
      { numRuns: 500 },
    );
  });

  it('takes into a page that stopped at its bound on work what lies above where it stopped, and goes on from there unless full', () => {
    fc.assert(
      fc.property(history, history, firstPageQuery, floorPosition, (seen, written, query, floor) => {
        const events = readPage(seen, query, floor);
        fc.pre(events.length < query.limit);
        const merged = mergeWritten(query, { events, resumeAfter: floor }, written);
        const expected = readPage([...seen, ...written], query, floor);
        expect(merged?.events).to.deep.equal(expected);
        expect(merged?.resumeAfter).to.deep.equal(expected.length < query.limit ? floor : undefined);
      }),
      { numRuns: 500 },
    );
  });

  it('returns the page itself when nothing written belongs on it', () => {
    const query: FeedQuery = { orgId: ORG, projectId: PROJECT, filters: { deviceId: DEVICES[0]! }, after: undefined, limit: 2 };
    const page: FeedSlice = { events: [stored({ instant: INSTANTS[3]!, id: IDS[0]!, project: PROJECT, domain: 'device', entity: 'reading', action: 'recorded', device: DEVICES[0]!, fleet: null })] };
    const written = [
      stored({ instant: INSTANTS[3]!, id: IDS[1]!, project: PROJECT, domain: 'device', entity: 'reading', action: 'recorded', device: DEVICES[1]!, fleet: null }),
      stored({ instant: INSTANTS[3]!, id: IDS[2]!, project: OTHER_PROJECT, domain: 'device', entity: 'reading', action: 'recorded', device: DEVICES[0]!, fleet: null }),
      page.events[0]!,
    ];
    expect(mergeWritten(query, page, written)).to.equal(page);
  });

  it('takes the events of a project whose page was asked with its ids in upper case', () => {
    const event = stored({ instant: INSTANTS[0]!, id: IDS[3]!, project: PROJECT, domain: 'device', entity: 'reading', action: 'recorded', device: DEVICES[0]!, fleet: FLEETS[0]! });
    const query: FeedQuery = { orgId: ORG.toUpperCase(), projectId: PROJECT.toUpperCase(), filters: { deviceId: DEVICES[0]!, fleetId: FLEETS[0]! }, after: undefined, limit: 3 };
    expect(mergeWritten(query, { events: [] }, [event])?.events).to.deep.equal([event]);
  });

  it('brings no page by cursor up to date', () => {
    const query: FeedQuery = { orgId: ORG, projectId: PROJECT, filters: {}, after: { occurredAt: INSTANTS[3]!, id: IDS[0]! }, limit: 3 };
    expect(mergeWritten(query, { events: [] }, [])).to.equal(undefined);
  });
});
