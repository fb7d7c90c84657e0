import { expect } from 'chai';
import { createCommitPipeline } from '../../../src/ingest/commit-pipeline.js';
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

/** Lets every callback already queued run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('commit pipeline', () => {
  it('commits a partition in order even when a later batch is stored first', async () => {
    const pipeline = createCommitPipeline(100);
    const committed: string[] = [];
    const first = deferred();
    const second = deferred();
    await pipeline.admit(1);
    void pipeline.track('t/0', 1, first.promise, async () => void committed.push('first')).catch(() => undefined);
    await pipeline.admit(1);
    void pipeline.track('t/0', 1, second.promise, async () => void committed.push('second'));
    second.resolve();
    await flush();
    expect(committed).to.deep.equal([]);
    first.resolve();
    await pipeline.settled();
    expect(committed).to.deep.equal(['first', 'second']);
  });

  it('never commits past a batch whose store failed', async () => {
    const pipeline = createCommitPipeline(100);
    const committed: string[] = [];
    const failed = deferred();
    await pipeline.admit(1);
    const broken = pipeline.track('t/0', 1, failed.promise, async () => void committed.push('failed'));
    await pipeline.admit(1);
    const after = pipeline.track('t/0', 1, Promise.resolve(), async () => void committed.push('after'));
    failed.reject(new Error('store down'));
    await pipeline.settled();
    expect(committed).to.deep.equal([]);
    expect(await messageOf(broken)).to.equal('store down');
    expect(await messageOf(after), 'the later batch was stored, but its commit would cover the failed one').to.equal('store down');
  });

  it('keeps partitions apart: a failure in one does not hold back another', async () => {
    const pipeline = createCommitPipeline(100);
    const committed: string[] = [];
    await pipeline.admit(2);
    void pipeline.track('t/0', 1, Promise.reject(new Error('refused')), async () => void committed.push('t/0')).catch(() => undefined);
    void pipeline.track('t/1', 1, Promise.resolve(), async () => void committed.push('t/1'));
    await pipeline.settled();
    expect(committed).to.deep.equal(['t/1']);
  });

  it('starts a partition on a clean chain after reset', async () => {
    const pipeline = createCommitPipeline(100);
    const committed: string[] = [];
    await pipeline.admit(1);
    void pipeline.track('t/0', 1, Promise.reject(new Error('revoked')), async () => void committed.push('before')).catch(() => undefined);
    await pipeline.settled();
    pipeline.reset();
    await pipeline.admit(1);
    await pipeline.track('t/0', 1, Promise.resolve(), async () => void committed.push('after'));
    expect(committed).to.deep.equal(['after']);
  });

  it('holds admission past the bound until stored events make room, first come first admitted', async () => {
    const pipeline = createCommitPipeline(10);
    const stored = deferred();
    await pipeline.admit(8);
    void pipeline.track('t/0', 8, stored.promise, async () => undefined);
    const admitted: string[] = [];
    const large = pipeline.admit(5).then(() => admitted.push('large'));
    const small = pipeline.admit(1).then(() => admitted.push('small'));
    await flush();
    expect(admitted, 'the small batch would fit, but it came after a waiting one').to.deep.equal([]);
    expect(pipeline.inFlight()).to.equal(8);
    stored.resolve();
    await Promise.all([large, small]);
    expect(admitted).to.deep.equal(['large', 'small']);
    expect(pipeline.inFlight()).to.equal(6);
  });

  it('admits a batch larger than the bound when nothing is in flight', async () => {
    const pipeline = createCommitPipeline(10);
    await pipeline.admit(50);
    expect(pipeline.inFlight()).to.equal(50);
  });

  it('releases room when a store fails, so a sick store cannot wedge admission', async () => {
    const pipeline = createCommitPipeline(10);
    await pipeline.admit(10);
    void pipeline.track('t/0', 10, Promise.reject(new Error('down')), async () => undefined).catch(() => undefined);
    await pipeline.admit(10);
    expect(pipeline.inFlight()).to.equal(10);
  });

  it('settles only after batches tracked while it waited', async () => {
    const pipeline = createCommitPipeline(100);
    const committed: string[] = [];
    const first = deferred();
    await pipeline.admit(1);
    void pipeline.track('t/0', 1, first.promise, async () => {
      committed.push('first');
      // A handler that was already running hands over one more batch during the wait.
      await pipeline.admit(1);
      void pipeline.track('t/1', 1, Promise.resolve(), async () => void committed.push('late'));
    });
    const settled = pipeline.settled();
    first.resolve();
    await settled;
    expect(committed).to.deep.equal(['first', 'late']);
  });
});
