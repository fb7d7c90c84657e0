import { expect } from 'chai';
import { bufferedBytes, createCommitPipeline, FencedError, HELD_PER_IN_FLIGHT, MESSAGE_OVERHEAD_BYTES } from '../../../src/ingest/commit-pipeline.js';
import { rejectionOf } from '../../support/rejections.js';

/** A promise settled from outside, standing for one batch's insert. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const messageOf = async (promise: Promise<unknown>) => ((await rejectionOf(promise)) as Error).message;

/** A batch of `events` events of 100 bytes each. */
const load = (events: number) => ({ events, bytes: events * 100 });
/** Bounds in events alone, for the tests of other things. */
const eventsOnly = (events: number) => ({ events, bytes: Infinity });

/** Lets every callback already queued run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('commit pipeline', () => {
  it('commits a partition in order even when a later batch is stored first', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const committed: string[] = [];
    const first = deferred();
    const second = deferred();
    await pipeline.admit(load(1));
    void pipeline.track('t/0', pipeline.generation(), load(1), first.promise, async () => void committed.push('first')).catch(() => undefined);
    await pipeline.admit(load(1));
    void pipeline.track('t/0', pipeline.generation(), load(1), second.promise, async () => void committed.push('second'));
    second.resolve();
    await flush();
    expect(committed).to.deep.equal([]);
    first.resolve();
    await pipeline.settled();
    expect(committed).to.deep.equal(['first', 'second']);
  });

  it('never commits past a batch whose store failed', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const committed: string[] = [];
    const failed = deferred();
    await pipeline.admit(load(1));
    const broken = pipeline.track('t/0', pipeline.generation(), load(1), failed.promise, async () => void committed.push('failed'));
    await pipeline.admit(load(1));
    const after = pipeline.track('t/0', pipeline.generation(), load(1), Promise.resolve(), async () => void committed.push('after'));
    failed.reject(new Error('store down'));
    await pipeline.settled();
    expect(committed).to.deep.equal([]);
    expect(await messageOf(broken)).to.equal('store down');
    expect(await messageOf(after), 'the later batch was stored, but its commit would cover the failed one').to.equal('store down');
  });

  it('keeps partitions apart: a failure in one does not hold back another', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const committed: string[] = [];
    await pipeline.admit(load(2));
    void pipeline.track('t/0', pipeline.generation(), load(1), Promise.reject(new Error('refused')), async () => void committed.push('t/0')).catch(() => undefined);
    void pipeline.track('t/1', pipeline.generation(), load(1), Promise.resolve(), async () => void committed.push('t/1'));
    await pipeline.settled();
    expect(committed).to.deep.equal(['t/1']);
  });

  it('starts a partition on a clean chain after a fence', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const committed: string[] = [];
    await pipeline.admit(load(1));
    void pipeline.track('t/0', pipeline.generation(), load(1), Promise.reject(new Error('revoked')), async () => void committed.push('before')).catch(() => undefined);
    await pipeline.settled();
    pipeline.joined();
    await pipeline.admit(load(1));
    await pipeline.track('t/0', pipeline.generation(), load(1), Promise.resolve(), async () => void committed.push('after'));
    expect(committed).to.deep.equal(['after']);
  });

  it('never commits a batch tracked before a fence, even one stored after it, while the new chain commits', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const committed: string[] = [];
    const old = deferred();
    await pipeline.admit(load(1));
    const oldLink = pipeline.track('t/0', pipeline.generation(), load(1), old.promise, async () => void committed.push('old'));
    // The rebalance lands while the old batch is still being stored.
    pipeline.joined();
    await pipeline.admit(load(1));
    const fresh = pipeline.track('t/0', pipeline.generation(), load(1), Promise.resolve(), async () => void committed.push('new'));
    await fresh;
    old.resolve();
    const error = await rejectionOf(oldLink);
    expect(error).to.be.instanceOf(FencedError);
    expect(committed, 'the old batch would move the offset back below the new one').to.deep.equal(['new']);
    expect(pipeline.inFlight().events, 'the fenced batch still releases its room').to.equal(0);
  });

  it('lets a commit already running when the fence comes finish, and commits nothing after it in the old chain', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const committing = deferred();
    const committed: string[] = [];
    await pipeline.admit(load(2));
    const first = pipeline.track('t/0', pipeline.generation(), load(1), Promise.resolve(), async () => {
      await committing.promise;
      committed.push('first');
    });
    const second = pipeline.track('t/0', pipeline.generation(), load(1), Promise.resolve(), async () => void committed.push('second'));
    await flush();
    pipeline.fence();
    committing.resolve();
    await first;
    expect(await rejectionOf(second)).to.be.instanceOf(FencedError);
    expect(committed).to.deep.equal(['first']);
  });

  it('releases handlers waiting for room with false when fenced, so a rebalance is not held behind a full pipeline', async () => {
    const pipeline = createCommitPipeline(eventsOnly(10));
    const stuck = deferred();
    await pipeline.admit(load(10));
    void pipeline.track('t/0', pipeline.generation(), load(10), stuck.promise, async () => undefined).catch(() => undefined);
    const waiting = pipeline.admit(load(5));
    await flush();
    pipeline.fence();
    expect(await waiting).to.equal(false);
    expect(pipeline.inFlight().events, 'a released handler took no room').to.equal(10);
    stuck.resolve();
    await pipeline.settled();
    expect(pipeline.inFlight().events).to.equal(0);
  });

  it('tells a partition stalled once its oldest uncommitted batch has waited longer than the bound, and not after its commit', async () => {
    let clock = 0;
    const pipeline = createCommitPipeline(eventsOnly(100), () => clock);
    const stored = deferred();
    await pipeline.admit(load(1));
    const link = pipeline.track('t/0', pipeline.generation(), load(1), stored.promise, async () => undefined);
    clock = 1000;
    expect(pipeline.stalled(1000)).to.deep.equal([]);
    clock = 1001;
    expect(pipeline.stalled(1000)).to.deep.equal([{ partition: 't/0', waitingMs: 1001 }]);
    stored.resolve();
    await link;
    expect(pipeline.stalled(1000), 'committed: nothing waits').to.deep.equal([]);
    // A new batch starts its own wait, not the partition's last commit's.
    clock = 5000;
    await pipeline.admit(load(1));
    void pipeline.track('t/0', pipeline.generation(), load(1), new Promise<void>(() => undefined), async () => undefined);
    clock = 5500;
    expect(pipeline.stalled(1000)).to.deep.equal([]);
    clock = 6001;
    expect(pipeline.stalled(1000).map((s) => s.partition)).to.deep.equal(['t/0']);
    pipeline.fence();
    expect(pipeline.stalled(1000), 'a fence forgets the old generation').to.deep.equal([]);
  });

  it('counts progress from each commit while batches keep coming, so a busy partition is not stalled', async () => {
    let clock = 0;
    const pipeline = createCommitPipeline(eventsOnly(100), () => clock);
    for (let i = 1; i <= 5; i += 1) {
      await pipeline.admit(load(1));
      const next = deferred();
      // One batch always open: the partition is never idle, but it commits every 800 ms.
      const link = pipeline.track('t/0', pipeline.generation(), load(1), next.promise, async () => undefined);
      clock = i * 800;
      expect(pipeline.stalled(1000), `at ${clock} ms`).to.deep.equal([]);
      next.resolve();
      await link;
    }
  });

  it('holds admission past the bound until stored events make room, first come first admitted', async () => {
    const pipeline = createCommitPipeline(eventsOnly(10));
    const stored = deferred();
    await pipeline.admit(load(8));
    void pipeline.track('t/0', pipeline.generation(), load(8), stored.promise, async () => undefined);
    const admitted: string[] = [];
    const large = pipeline.admit(load(5)).then(() => admitted.push('large'));
    const small = pipeline.admit(load(1)).then(() => admitted.push('small'));
    await flush();
    expect(admitted, 'the small batch would fit, but it came after a waiting one').to.deep.equal([]);
    expect(pipeline.inFlight().events).to.equal(8);
    stored.resolve();
    await Promise.all([large, small]);
    expect(admitted).to.deep.equal(['large', 'small']);
    expect(pipeline.inFlight().events).to.equal(6);
  });

  it('admits a batch larger than the bound when nothing is in flight', async () => {
    const pipeline = createCommitPipeline(eventsOnly(10));
    await pipeline.admit(load(50));
    expect(pipeline.inFlight().events).to.equal(50);
  });

  it('releases room when a store fails, so a sick store cannot wedge admission', async () => {
    const pipeline = createCommitPipeline(eventsOnly(10));
    await pipeline.admit(load(10));
    void pipeline.track('t/0', pipeline.generation(), load(10), Promise.reject(new Error('down')), async () => undefined).catch(() => undefined);
    await pipeline.admit(load(10));
    expect(pipeline.inFlight().events).to.equal(10);
  });

  it('settles only after batches tracked while it waited', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const committed: string[] = [];
    const first = deferred();
    await pipeline.admit(load(1));
    void pipeline.track('t/0', pipeline.generation(), load(1), first.promise, async () => {
      committed.push('first');
      // A handler that was already running hands over one more batch during the wait.
      await pipeline.admit(load(1));
      void pipeline.track('t/1', pipeline.generation(), load(1), Promise.resolve(), async () => void committed.push('late'));
    });
    const settled = pipeline.settled();
    first.resolve();
    await settled;
    expect(committed).to.deep.equal(['first', 'late']);
  });

  it('holds admission past the bound in bytes, whatever the count of events', async () => {
    const pipeline = createCommitPipeline({ events: 1000, bytes: 1000 });
    const stored = deferred();
    await pipeline.admit({ events: 2, bytes: 900 });
    void pipeline.track('t/0', pipeline.generation(), { events: 2, bytes: 900 }, stored.promise, async () => undefined);
    let admitted = false;
    const next = pipeline.admit({ events: 1, bytes: 200 }).then((ok) => (admitted = ok));
    await flush();
    expect(admitted, 'two events in flight, far below the count, but 1,100 bytes would pass the bound').to.equal(false);
    stored.resolve();
    await next;
    expect(admitted).to.equal(true);
    expect(pipeline.inFlight()).to.deep.equal({ events: 1, bytes: 200 });
  });

  describe('byte budget (INGEST_MAX_BUFFERED_BYTES)', () => {
    /** In-flight bounds far above the budget, so only the budget can hold a batch back. */
    const budgetOnly = (buffered: number) => ({ events: 1_000_000, bytes: Infinity, buffered });

    it('counts each message at its value plus what the process holds beside it', () => {
      expect(bufferedBytes({ events: 3, bytes: 1500 })).to.equal(1500 + 3 * MESSAGE_OVERHEAD_BYTES);
    });

    it('holds admission once the held batches would cost more than the budget, until one is committed', async () => {
      // Room for 10 messages of 100 bytes, counted with their overhead, and not one more.
      const pipeline = createCommitPipeline(budgetOnly(bufferedBytes(load(10))));
      const stored = deferred();
      const commitGate = deferred();
      await pipeline.admit(load(6));
      void pipeline.track('t/0', pipeline.generation(), load(6), stored.promise, () => commitGate.promise);
      await pipeline.admit(load(4));
      await pipeline.track('t/1', pipeline.generation(), load(4), Promise.resolve(), async () => undefined);
      let admitted = false;
      const next = pipeline.admit(load(5)).then((ok) => (admitted = ok));
      await flush();
      expect(admitted, 't/1 committed, t/0 still holds 6 of 10: 5 more would pass the budget').to.equal(false);
      expect(pipeline.buffered()).to.equal(bufferedBytes(load(6)));
      // Stored is not enough: a stored batch waiting for its commit still holds its messages.
      stored.resolve();
      await flush();
      expect(admitted, 'stored but not committed').to.equal(false);
      commitGate.resolve();
      await next;
      expect(admitted).to.equal(true);
      expect(pipeline.buffered()).to.equal(bufferedBytes(load(5)));
    });

    it('never lets what is held pass the budget, whatever order batches of many sizes come and go in', async () => {
      const budget = bufferedBytes(load(40));
      const pipeline = createCommitPipeline(budgetOnly(budget));
      let peak = 0;
      const handlers: Promise<void>[] = [];
      for (let i = 0; i < 60; i += 1) {
        const size = 1 + ((i * 7) % 13);
        handlers.push(
          pipeline.admit(load(size)).then((ok) => {
            expect(ok).to.equal(true);
            peak = Math.max(peak, pipeline.buffered());
            // Each batch takes a few turns of the loop to store and commit, so many overlap.
            const stored = new Promise<void>((resolve) => setTimeout(resolve, i % 3));
            return pipeline.track(`t/${i % 4}`, pipeline.generation(), load(size), stored, async () => undefined);
          }),
        );
      }
      await Promise.all(handlers);
      expect(peak).to.be.at.most(budget);
      expect(peak, 'the budget was reached, so it is what held the batches back').to.be.above(budget / 2);
      expect(pipeline.buffered()).to.equal(0);
    });

    it('admits a batch above the budget when nothing is held, so a large one is taken alone rather than never', async () => {
      const pipeline = createCommitPipeline(budgetOnly(bufferedBytes(load(10))));
      expect(await pipeline.admit(load(50))).to.equal(true);
    });
  });

  it('refuses a batch of an earlier generation without touching the new chain', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const committed: string[] = [];
    // The handler read the generation, then a rebalance came before it tracked its batch.
    const fetchedIn = pipeline.generation();
    pipeline.joined();
    await pipeline.admit(load(1));
    const stale = pipeline.track('t/0', fetchedIn, load(1), Promise.resolve(), async () => void committed.push('stale'));
    expect(await rejectionOf(stale)).to.be.instanceOf(FencedError);
    await pipeline.admit(load(1));
    await pipeline.track('t/0', pipeline.generation(), load(1), Promise.resolve(), async () => void committed.push('fresh'));
    expect(committed, 'the new generation commits; the stale batch did not break its chain').to.deep.equal(['fresh']);
    expect(pipeline.inFlight().events, 'the stale batch released its room').to.equal(0);
  });

  it('reports a partition whose chain broke as stalled at once, until a fence starts a new generation', async () => {
    let clock = 0;
    const pipeline = createCommitPipeline(eventsOnly(100), () => clock);
    await pipeline.admit(load(1));
    const link = pipeline.track('t/0', pipeline.generation(), load(1), Promise.resolve(), async () => {
      throw new Error('commit refused');
    });
    await rejectionOf(link);
    clock = 5;
    // Nothing is open any more, but nothing of the partition can commit until the next generation.
    expect(pipeline.stalled(60_000)).to.deep.equal([{ partition: 't/0', waitingMs: 5 }]);
    pipeline.fence();
    expect(pipeline.stalled(60_000)).to.deep.equal([]);
  });

  // Found in review: a dead-letter send refused for minutes let every later batch of the partition be stored and parked, messages and all, until the heap ran out.
  it('stops admitting once the batches stored but waiting for an earlier commit reach their bound, and admits again when it lands', async () => {
    const pipeline = createCommitPipeline(eventsOnly(10));
    const blocked = deferred();
    await pipeline.admit(load(10));
    const first = pipeline.track('t/0', pipeline.generation(), load(10), Promise.resolve(), () => blocked.promise);
    const parked: Promise<void>[] = [];
    for (let i = 1; i < HELD_PER_IN_FLIGHT; i += 1) {
      expect(await pipeline.admit(load(10)), `batch ${i + 1}`).to.equal(true);
      parked.push(pipeline.track('t/0', pipeline.generation(), load(10), Promise.resolve(), async () => undefined));
    }
    await flush();
    expect(pipeline.inFlight().events, 'every batch is stored').to.equal(0);
    expect(pipeline.held().events).to.equal(HELD_PER_IN_FLIGHT * 10);
    let admitted = false;
    const next = pipeline.admit(load(1)).then((ok) => (admitted = ok));
    await flush();
    expect(admitted, 'nothing in flight, but the held bound is reached').to.equal(false);
    blocked.resolve();
    await Promise.all([first, ...parked, next]);
    expect(admitted).to.equal(true);
    expect(pipeline.held().events).to.equal(1);
  });

  it('admits nothing from the start of a rebalance until the member joins the next generation', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    pipeline.fence();
    expect(await pipeline.admit(load(1)), 'a batch handed over between the fence and the join').to.equal(false);
    expect(pipeline.held().events).to.equal(0);
    pipeline.joined();
    expect(await pipeline.admit(load(1))).to.equal(true);
  });

  it('counts a fenced-off batch as held until its link settles, and then not at all', async () => {
    const pipeline = createCommitPipeline(eventsOnly(100));
    const stored = deferred();
    await pipeline.admit(load(3));
    const old = pipeline.track('t/0', pipeline.generation(), load(3), stored.promise, async () => undefined);
    pipeline.joined();
    expect(pipeline.held().events, 'its messages are still in memory').to.equal(3);
    stored.resolve();
    expect(await rejectionOf(old)).to.be.instanceOf(FencedError);
    await flush();
    expect(pipeline.held()).to.deep.equal({ events: 0, bytes: 0 });
  });
});
