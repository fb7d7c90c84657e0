import { expect } from 'chai';
import { bisectInsert } from '../../../src/ingest/bisect-insert.js';

class Refusal extends Error {}
class Outage extends Error {}

/**
 * A store of numbers that refuses any insert holding a poisoned one, all or nothing like a
 * ClickHouse insert, and can fall sick after a given number of inserts.
 */
function fakeStore(poison: ReadonlySet<number>, options: { sickAfterInserts?: number } = {}) {
  const stored = new Set<number>();
  const calls: number[][] = [];
  return {
    stored,
    calls,
    async insert(items: readonly number[]) {
      calls.push([...items]);
      if (options.sickAfterInserts !== undefined && calls.length > options.sickAfterInserts) throw new Outage('connection refused');
      const bad = items.find((n) => poison.has(n));
      if (bad !== undefined) throw new Refusal(`row ${bad} breaks a constraint`);
      for (const n of items) stored.add(n);
    },
    refusal: async (error: unknown) => (error instanceof Refusal ? error.message : undefined),
  };
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('bisect insert', () => {
  it('stores a batch the store takes with one insert', async () => {
    const store = fakeStore(new Set());
    const result = await bisectInsert(range(1000), store);
    expect(result).to.deep.equal({ refused: [], inserts: 1 });
    expect(store.stored.size).to.equal(1000);
  });

  it('makes no insert for an empty batch', async () => {
    const store = fakeStore(new Set());
    expect(await bisectInsert([], store)).to.deep.equal({ refused: [], inserts: 0 });
  });

  for (const position of [0, 1, 499, 500, 998, 999]) {
    it(`finds one poison among 1,000 (at ${position}) in about log2(1000) inserts and stores the other 999`, async () => {
      const store = fakeStore(new Set([position]));
      const result = await bisectInsert(range(1000), store);
      expect(result.refused).to.deep.equal([{ item: position, refusal: `row ${position} breaks a constraint` }]);
      // 9 or 10 levels of halves (log2(1000) ≈ 9.97): one insert per level at best, two at worst, plus the whole batch and the lone row.
      expect(result.inserts).to.be.within(9 + 2, 2 * 10 + 1);
      expect(result.inserts).to.equal(store.calls.length);
      expect(store.stored.size).to.equal(999);
      expect(store.stored.has(position)).to.equal(false);
      // The verdict on the poison came from an insert that held it alone.
      expect(store.calls).to.deep.include([position]);
    });
  }

  it('isolates several poisons, in batch order, and stores everything else', async () => {
    const poison = new Set([3, 4, 250, 777, 999]);
    const store = fakeStore(poison);
    const result = await bisectInsert(range(1000), store);
    expect(result.refused.map((r) => r.item)).to.deep.equal([3, 4, 250, 777, 999]);
    expect(store.stored.size).to.equal(995);
    // Each poison costs at most one search of about 2·log2(n) inserts.
    expect(result.inserts).to.be.at.most(1 + poison.size * 2 * 10);
  });

  it('refuses every row of an all-poison batch, each on its own insert', async () => {
    const store = fakeStore(new Set(range(8)));
    const result = await bisectInsert(range(8), store);
    expect(result.refused.map((r) => r.item)).to.deep.equal(range(8));
    expect(store.stored.size).to.equal(0);
    // The whole tree is tried: 1 + 2 + 4 + 8.
    expect(result.inserts).to.equal(15);
    for (const n of range(8)) expect(store.calls).to.deep.include([n]);
  });

  it('refuses a batch of one poisoned row with its first insert', async () => {
    const store = fakeStore(new Set([0]));
    expect(await bisectInsert([0], store)).to.deep.equal({ refused: [{ item: 0, refusal: 'row 0 breaks a constraint' }], inserts: 1 });
  });

  it('refuses no row whose own insert stores, even where the search expected a refusal', async () => {
    // The first insert is refused, then the store takes everything: a refusal that does not repeat.
    let calls = 0;
    const result = await bisectInsert(range(16), {
      async insert() {
        calls += 1;
        if (calls === 1) throw new Refusal('once');
      },
      refusal: async (error: unknown) => (error instanceof Refusal ? error.message : undefined),
    });
    expect(result.refused).to.deep.equal([]);
  });

  // Found in review: one timeout of a one-event insert, the store answering the probe, dead-lettered a valid event.
  it('inserts a row alone once more before refusing it on a doubtful refusal, and stores it if that insert takes it', async () => {
    const calls: number[][] = [];
    let failures = 1;
    const options = {
      async insert(items: readonly number[]) {
        calls.push([...items]);
        if (failures > 0) {
          failures -= 1;
          throw new Refusal('timed out');
        }
      },
      refusal: async (error: unknown) => (error instanceof Refusal ? error.message : undefined),
      doubt: (refusal: string) => refusal === 'timed out',
    };
    expect(await bisectInsert([7], options)).to.deep.equal({ refused: [], inserts: 2 });
    expect(calls).to.deep.equal([[7], [7]]);
    failures = 2;
    expect(await bisectInsert([7], options), 'refused twice alone: judged').to.deep.equal({ refused: [{ item: 7, refusal: 'timed out' }], inserts: 2 });
  });

  it('finds the same refused rows whether refusals are doubted or not, with one insert more for each when doubted', async () => {
    const store = fakeStore(new Set([3]));
    const result = await bisectInsert(range(8), { ...store, doubt: () => false });
    const doubting = fakeStore(new Set([3]));
    const doubted = await bisectInsert(range(8), { ...doubting, doubt: () => true });
    expect(result.refused).to.deep.equal(doubted.refused);
    expect(doubted.inserts, 'the poison row inserted alone once more').to.equal(result.inserts + 1);
  });

  it('aborts on a sick store in the middle of the search, refusing nothing, and throws its error', async () => {
    const store = fakeStore(new Set([10, 900]), { sickAfterInserts: 5 });
    let error: unknown;
    const result = await bisectInsert(range(1000), store).catch((e: unknown) => {
      error = e;
      return undefined;
    });
    expect(result).to.equal(undefined);
    expect(error).to.be.instanceOf(Outage);
    // The search stopped at the sick insert: nothing after it was tried.
    expect(store.calls).to.have.length(6);
  });

  it('throws a sick store at the first insert without splitting', async () => {
    const store = fakeStore(new Set([1]), { sickAfterInserts: 0 });
    let error: unknown;
    await bisectInsert(range(100), store).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(Outage);
    expect(store.calls).to.have.length(1);
  });
});
