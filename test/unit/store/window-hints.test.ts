import { expect } from 'chai';
import type { FeedQuery } from '../../../src/store/event-store.js';
import { WINDOW_PLAN } from '../../../src/store/feed-windows.js';
import { createWindowHints } from '../../../src/store/window-hints.js';
import { uuid } from '../../support/factories.js';

const HOUR = 3_600_000;
const query = (overrides: Partial<FeedQuery> = {}): FeedQuery => ({ orgId: uuid(), projectId: uuid(), filters: {}, after: undefined, limit: 51, ...overrides });

describe('window hints', () => {
  it('starts a scope with the plan as it is, then with a first window a quarter wider than its last full page spanned', () => {
    const hints = createWindowHints();
    const q = query();
    expect(hints.plan(q, WINDOW_PLAN)).to.equal(WINDOW_PLAN);
    hints.learn(q, 20 * HOUR, WINDOW_PLAN);
    expect(hints.plan(q, WINDOW_PLAN)).to.deep.equal({ ...WINDOW_PLAN, firstMs: 25 * HOUR });
    // A cursor or time bounds are the same scope; another filter is not.
    expect(hints.plan({ ...q, after: { occurredAt: '2026-01-01 00:00:00.000000', id: uuid() }, filters: { since: '2025-01-01 00:00:00.000000' } }, WINDOW_PLAN).firstMs).to.equal(25 * HOUR);
    expect(hints.plan({ ...q, filters: { domain: 'edge' } }, WINDOW_PLAN)).to.equal(WINDOW_PLAN);
  });

  it('keeps the first window between the plan\'s first and widest', () => {
    const hints = createWindowHints();
    const [dense, sparse] = [query(), query()];
    hints.learn(dense, 5, WINDOW_PLAN);
    hints.learn(sparse, 10 * 365 * 24 * HOUR, WINDOW_PLAN);
    expect(hints.plan(dense, WINDOW_PLAN).firstMs).to.equal(WINDOW_PLAN.firstMs);
    expect(hints.plan(sparse, WINDOW_PLAN).firstMs).to.equal(WINDOW_PLAN.widestMs);
  });

  it('forgets the scope used longest ago beyond its capacity', () => {
    const hints = createWindowHints(2);
    const [a, b, c] = [query(), query(), query()];
    hints.learn(a, 2 * HOUR, WINDOW_PLAN);
    hints.learn(b, 2 * HOUR, WINDOW_PLAN);
    hints.learn(a, 3 * HOUR, WINDOW_PLAN);
    hints.learn(c, 2 * HOUR, WINDOW_PLAN);
    expect(hints.plan(b, WINDOW_PLAN), 'b, learned longest ago').to.equal(WINDOW_PLAN);
    expect(hints.plan(a, WINDOW_PLAN).firstMs).to.equal(3.75 * HOUR);
    expect(hints.plan(c, WINDOW_PLAN).firstMs).to.equal(2.5 * HOUR);
  });
});
