import { expect } from 'chai';
import type { FeedPosition } from '../../../src/store/event-store.js';
import { foldAdjacentCopies, readDistinct } from '../../../src/store/fold-copies.js';

interface Row {
  readonly id: string;
  readonly occurred_at: string;
}

const row = (n: number): Row => ({ id: `e${n}`, occurred_at: `t${String(100 - n).padStart(3, '0')}` });

/** A store of raw rows in feed order, copies included, read the way feedSql reads it: strictly after a position. */
function rawStore(rows: readonly Row[]) {
  const reads: { after: FeedPosition | undefined; limit: number }[] = [];
  const read = async (after: FeedPosition | undefined, limit: number) => {
    reads.push({ after, limit });
    const start = after === undefined ? 0 : rows.findLastIndex((r) => r.id === after.id && r.occurred_at === after.occurredAt) + 1;
    return rows.slice(start, start + limit);
  };
  return { read, reads };
}

describe('folding redelivered copies in the feed', () => {
  it('keeps one row of each run of adjacent copies', () => {
    const [a, b, c] = [row(1), row(2), row(3)];
    expect(foldAdjacentCopies([a, a, b, c, c, c])).to.deep.equal([a, b, c]);
  });

  it('drops a leading copy of the row that ended the previous read', () => {
    const [a, b] = [row(1), row(2)];
    expect(foldAdjacentCopies([a, b], a)).to.deep.equal([b]);
  });

  it('keeps one id at two instants: two events, as the store keeps them', () => {
    const a = row(1);
    const sameIdLater = { ...a, occurred_at: 't200' };
    expect(foldAdjacentCopies([sameIdLater, a])).to.deep.equal([sameIdLater, a]);
    expect(foldAdjacentCopies([a], sameIdLater)).to.deep.equal([a]);
  });

  it('fills a page with distinct events when copies shortened the first read, starting again after its last raw row', async () => {
    const [a, b, c, d] = [row(1), row(2), row(3), row(4)];
    const store = rawStore([a, a, b, b, c, d]);
    expect(await readDistinct(store.read, undefined, 3)).to.deep.equal([a, b, c]);
    expect(store.reads).to.deep.equal([
      { after: undefined, limit: 3 },
      { after: { occurredAt: b.occurred_at, id: 'e2' }, limit: 1 },
    ]);
  });

  it('returns a short page only when the rows run out', async () => {
    const [a, b] = [row(1), row(2)];
    const store = rawStore([a, a, a, b, b]);
    expect(await readDistinct(store.read, undefined, 5)).to.deep.equal([a, b]);
  });

  it('never returns a copy of a row split across two reads', async () => {
    const [a, b, c] = [row(1), row(2), row(3)];
    const store = rawStore([a, b, b, b, c]);
    expect(await readDistinct(store.read, undefined, 2)).to.deep.equal([a, b]);
    expect(await readDistinct(store.read, { occurredAt: b.occurred_at, id: 'e2' }, 2)).to.deep.equal([c]);
  });
});
