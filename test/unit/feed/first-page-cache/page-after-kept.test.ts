import { expect } from 'chai';
import fc from 'fast-check';
import { KEPT_PAGES_HELD, KEPT_PAGES_READ } from '../../../../src/feed/pages/feed-service.js';
import { compareFeedOrder, mergeWritten } from '../../../../src/feed/first-page-cache/first-page-merge.js';
import { pageAfterKept } from '../../../../src/feed/first-page-cache/page-after-kept.js';
import type { FeedPosition, FeedQuery, FeedSlice, StoredEvent } from '../../../../src/store/event-store.js';
import { canonicalEvent, uuid } from '../../../support/factories.js';

const ORG = uuid();
const PROJECT = uuid();
/** Few instants and ids, so that pages hold many events at one instant and cursors fall between events as well as on them. */
const INSTANTS = ['2026-11-26 10:00:00.000000', '2026-11-26 10:00:00.000001', '2026-11-26 10:00:01.000000', '2026-11-26 10:00:02.500000'];
const IDS = ['00000000-0000-0000-0000-000000000001', 'ffffffff-ffff-ffff-0000-000000000000', '00000001-0000-0000-0000-000000000000', uuid(), uuid()];

const position = fc.record({ occurredAt: fc.constantFrom(...INSTANTS), id: fc.constantFrom(...IDS) });
const at = (p: FeedPosition): StoredEvent => ({ event: canonicalEvent({ id: p.id, org_id: ORG, project_id: PROJECT }), position: p });
const newestFirst = (events: readonly StoredEvent[]) => [...events].sort((a, b) => compareFeedOrder(b.position, a.position));
const distinct = (positions: readonly FeedPosition[]) => [...new Map(positions.map((p) => [`${p.occurredAt}/${p.id}`, p])).values()];
/** The events of `history` strictly after `cursor` in the feed's order: what a store read from the cursor sees. */
const after = (history: readonly StoredEvent[], cursor: FeedPosition) => newestFirst(history).filter((e) => compareFeedOrder(e.position, cursor) < 0);

/**
 * A first page as the feed keeps it: read `readLimit` deep from `older` (the whole range,
 * or up to where a read stopped at its bound on work), then brought up to date with
 * `newer`, written after its read, and held to `heldAtMost` events.
 */
const keptCase = fc
  .record({
    limit: fc.integer({ min: 1, max: 4 }),
    older: fc.array(position, { maxLength: 20 }).map(distinct),
    newer: fc.array(position, { maxLength: 6 }),
    stoppedAt: fc.option(position, { nil: undefined }),
    cursor: position,
  })
  .map(({ limit, older, newer, stoppedAt, cursor }) => {
    const readLimit = KEPT_PAGES_READ * limit + 1;
    const query: FeedQuery = { orgId: ORG, projectId: PROJECT, filters: {}, after: undefined, limit: readLimit };
    const above = newestFirst(older.map(at)).filter((e) => stoppedAt === undefined || compareFeedOrder(e.position, stoppedAt) > 0);
    // A read stops at its bound on work only short of its limit.
    const read: FeedSlice = stoppedAt !== undefined && above.length < readLimit ? { events: above, resumeAfter: stoppedAt } : { events: newestFirst(older.map(at)).slice(0, readLimit) };
    const written = newer.map(at);
    const kept = mergeWritten(query, read, written, KEPT_PAGES_HELD * limit + 1)!;
    // Copies are one event, as the store's fold has them.
    const history = distinct([...older, ...newer]).map(at);
    return { limit, readLimit, read, kept, history, cursor };
  });

describe('the page after a kept first page', () => {
  it('is the page a store read from the cursor answers, whenever the kept page can tell it', () => {
    fc.assert(
      fc.property(keptCase, ({ limit, readLimit, kept, history, cursor }) => {
        const want = limit + 1;
        const cut = pageAfterKept(kept, cursor, want, readLimit);
        if (cut === undefined) return;
        const ids = (events: readonly StoredEvent[]) => events.map((e) => e.position);
        expect(cut.resumeAfter, 'a page cut is whole, or the end of the range').to.equal(undefined);
        expect(ids(cut.events)).to.deep.equal(ids(after(history, cursor).slice(0, want)));
      }),
      { numRuns: 3000 },
    );
  });

  it('is always cut for the cursor the first page gives, before anything is written', () => {
    fc.assert(
      fc.property(keptCase, ({ limit, readLimit, read }) => {
        // The first page is the kept read's first `limit`; its cursor, the last of them. A
        // read that stopped at its bound on work short of two pages leaves the second to the store.
        if (read.events.length <= limit || read.resumeAfter !== undefined) return;
        const cursor = read.events[limit - 1]!.position;
        const cut = pageAfterKept(read, cursor, limit + 1, readLimit);
        expect(cut, 'the second page, from memory').to.not.equal(undefined);
        expect(cut!.events.map((e) => e.position)).to.deep.equal(read.events.slice(limit, 2 * limit + 1).map((e) => e.position));
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves to the store a cursor below a full kept page, or a page that would run past it', () => {
    const events = newestFirst(['1', '2', '3', '4', '5'].map((s) => at({ occurredAt: `2026-11-26 10:00:0${s}.000000`, id: IDS[0]! })));
    const full: FeedSlice = { events };
    expect(pageAfterKept(full, events[1]!.position, 3, 5), 'three after the second of five').to.deep.equal({ events: events.slice(2, 5) });
    expect(pageAfterKept(full, events[2]!.position, 3, 5), 'two held after the third, a third may lie below').to.equal(undefined);
    expect(pageAfterKept(full, { occurredAt: '2026-11-26 10:00:00.000000', id: IDS[0]! }, 3, 5), 'below what it holds').to.equal(undefined);
    const stopped: FeedSlice = { events: events.slice(0, 4), resumeAfter: events[4]!.position };
    expect(pageAfterKept(stopped, events[0]!.position, 3, 5), 'a whole page above where its read stopped').to.deep.equal({ events: events.slice(1, 4) });
    expect(pageAfterKept(stopped, events[1]!.position, 3, 5), 'a short one: a read from the cursor may fill it').to.equal(undefined);
    expect(pageAfterKept({ events: events.slice(0, 3) }, events[2]!.position, 3, 5), 'the end of a range held whole').to.deep.equal({ events: [] });
  });
});
