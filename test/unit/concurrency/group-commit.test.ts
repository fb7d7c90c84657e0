import { expect } from 'chai';
import { createGroupCommit } from '../../../src/concurrency/group-commit.js';

function deferred() {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}

describe('group commit', () => {
  it('flushes an idle write at once, on its own', async () => {
    const flushes: number[][] = [];
    const gc = createGroupCommit<number>(async (items) => void flushes.push(items));
    await gc.write([1]);
    expect(flushes).to.deep.equal([[1]]);
  });

  it('coalesces the writes that arrive during a flush into the next one', async () => {
    const flushes: number[][] = [];
    const gate = deferred();
    const gc = createGroupCommit<number>(async (items) => {
      flushes.push(items);
      if (flushes.length === 1) await gate.promise;
    });
    const first = gc.write([1]);
    const rest = [gc.write([2]), gc.write([3, 4]), gc.write([5])];
    gate.release();
    await Promise.all([first, ...rest]);
    expect(flushes).to.deep.equal([[1], [2, 3, 4, 5]]);
  });

  it('rejects exactly the writers of a failed flush', async () => {
    const gate = deferred();
    let calls = 0;
    const gc = createGroupCommit<number>(async (items) => {
      calls += 1;
      if (calls === 1) await gate.promise;
      if (items.includes(2)) throw new Error('disk full');
    });
    const ok = gc.write([1]);
    const failing = gc.write([2]);
    gate.release();
    await ok;
    let error: unknown;
    await failing.catch((e: unknown) => (error = e));
    expect((error as Error).message).to.equal('disk full');
    await gc.write([3]);
  });

  it('splits a backlog larger than maxItems', async () => {
    const flushes: number[][] = [];
    const gate = deferred();
    const gc = createGroupCommit<number>(async (items) => {
      flushes.push(items);
      if (flushes.length === 1) await gate.promise;
    }, { maxItems: 3 });
    const writes = [gc.write([0]), gc.write([1, 2]), gc.write([3]), gc.write([4, 5])];
    gate.release();
    await Promise.all(writes);
    expect(flushes).to.deep.equal([[0], [1, 2, 3], [4, 5]]);
  });

  it('splits a backlog so that no flush passes maxWeight, and sends a heavier write alone', async () => {
    const flushes: string[][] = [];
    const gate = deferred();
    const gc = createGroupCommit<string>(
      async (items) => {
        flushes.push(items);
        if (flushes.length === 1) await gate.promise;
      },
      { weigh: (item) => item.length, maxWeight: 10 },
    );
    const writes = [gc.write(['a']), gc.write(['bbbb', 'cccc']), gc.write(['dd']), gc.write(['e'.repeat(25)]), gc.write(['ff'])];
    gate.release();
    await Promise.all(writes);
    expect(flushes).to.deep.equal([['a'], ['bbbb', 'cccc', 'dd'], ['e'.repeat(25)], ['ff']]);
    for (const flush of flushes.filter((f) => f.length > 1)) expect(flush.join('').length).to.be.at.most(10);
  });

  it('starts a lingering flush at once when the queued weight reaches maxWeight', async () => {
    const flushes: string[][] = [];
    const gc = createGroupCommit<string>(async (items) => void flushes.push(items), { lingerMs: 60_000, weigh: (i) => i.length, maxWeight: 6 });
    await Promise.all([gc.write(['abc']), gc.write(['def'])]);
    expect(flushes).to.deep.equal([['abc', 'def']]);
  });

  describe('with isolate', () => {
    class Refused extends Error {}
    /** A sink that refuses any flush holding 13, and fails every flush while `down`. */
    function refusingSink() {
      const flushes: number[][] = [];
      const gate = deferred();
      const state = { down: false };
      const flush = async (items: number[]) => {
        flushes.push(items);
        if (flushes.length === 1) await gate.promise;
        if (state.down) throw new Error('connection refused');
        if (items.includes(13)) throw new Refused('13 refused');
      };
      return { flushes, gate, state, flush };
    }

    it("redoes a refused shared flush write by write, so only the refused write's caller fails", async () => {
      const sink = refusingSink();
      const gc = createGroupCommit<number>(sink.flush, { isolate: (e) => e instanceof Refused });
      const first = gc.write([0]);
      const outcomes = Promise.allSettled([gc.write([1, 2]), gc.write([13, 14]), gc.write([3])]);
      sink.gate.release();
      await first;
      expect((await outcomes).map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect(sink.flushes).to.deep.equal([[0], [1, 2, 13, 14, 3], [1, 2], [13, 14], [3]]);
    });

    it('fails every writer of a shared flush alike when the sink itself fails', async () => {
      const sink = refusingSink();
      const gc = createGroupCommit<number>(sink.flush, { isolate: (e) => e instanceof Refused });
      const first = gc.write([0]);
      sink.state.down = true;
      const outcomes = Promise.allSettled([gc.write([1]), gc.write([13])]);
      sink.gate.release();
      await first.catch(() => undefined);
      expect((await outcomes).map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
      expect(sink.flushes).to.deep.equal([[0], [1, 13]]);
    });
  });
});

describe('group commit with linger', () => {
  it('holds a partial batch while it lingers, so later writes join it', async () => {
    const flushes: number[][] = [];
    const gc = createGroupCommit<number>(async (items) => void flushes.push(items), { lingerMs: 60_000, maxItems: 100 });
    const writes = [gc.write([1]), gc.write([2])];
    await new Promise((r) => setImmediate(r));
    expect(flushes).to.deep.equal([]);
    writes.push(gc.write([3]));
    await new Promise((r) => setImmediate(r));
    expect(flushes, 'still lingering').to.deep.equal([]);
    await gc.drain();
    await Promise.all(writes);
    expect(flushes).to.deep.equal([[1, 2, 3]]);
  });

  it('flushes a partial batch by itself once lingerMs has passed, and not before', async () => {
    const flushedAt: number[] = [];
    const gc = createGroupCommit<number>(async () => void flushedAt.push(performance.now()), { lingerMs: 50, maxItems: 100 });
    const writtenAt = performance.now();
    await gc.write([1]);
    // A lower bound only: a loaded machine can make the timer late, never early.
    expect(flushedAt).to.have.length(1);
    expect(flushedAt[0]! - writtenAt).to.be.at.least(45);
  });

  it('flushes at once when maxItems is reached', async () => {
    const flushes: number[][] = [];
    const gc = createGroupCommit<number>(async (items) => void flushes.push(items), { lingerMs: 60_000, maxItems: 3 });
    await Promise.all([gc.write([1, 2]), gc.write([3])]);
    expect(flushes).to.deep.equal([[1, 2, 3]]);
  });

  it('flushes a lingering batch on drain', async () => {
    const flushes: number[][] = [];
    const gc = createGroupCommit<number>(async (items) => void flushes.push(items), { lingerMs: 60_000, maxItems: 100 });
    const write = gc.write([7]);
    await gc.drain();
    await write;
    expect(flushes).to.deep.equal([[7]]);
  });

  it('runs up to `concurrency` flushes at once, and the next batch waits for one of them to end', async () => {
    const gates = [deferred(), deferred(), deferred()];
    const started: number[][] = [];
    const gc = createGroupCommit<number>(
      async (items) => {
        started.push(items);
        await gates[started.length - 1]!.promise;
      },
      { concurrency: 2 },
    );
    const writes = [gc.write([1]), gc.write([2]), gc.write([3])];
    await new Promise((r) => setImmediate(r));
    expect(started, 'two flushes in flight, the third write queued').to.deep.equal([[1], [2]]);
    gates[1]!.release();
    await writes[1];
    await new Promise((r) => setImmediate(r));
    expect(started).to.deep.equal([[1], [2], [3]]);
    gates[0]!.release();
    gates[2]!.release();
    await Promise.all(writes);
  });

  it('drains every flush in flight when several run at once', async () => {
    const gates = [deferred(), deferred()];
    let done = 0;
    let calls = 0;
    const gc = createGroupCommit<number>(
      async () => {
        await gates[calls++]!.promise;
        done += 1;
      },
      { concurrency: 2 },
    );
    void gc.write([1]);
    void gc.write([2]);
    const drained = gc.drain().then(() => done);
    gates[1]!.release();
    await new Promise((r) => setImmediate(r));
    gates[0]!.release();
    expect(await drained).to.equal(2);
  });
});
