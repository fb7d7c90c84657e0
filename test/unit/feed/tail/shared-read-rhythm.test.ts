import { expect } from 'chai';
import { createSharedPoller, MAX_RETRY_DELAY_MS, MIN_READ_GAP_MS, type PollerClock } from '../../../../src/feed/tail/shared-poller.js';
import type { StoredBatches } from '../../../../src/feed/stored-batches.js';
import { createTailFanOut } from '../../../../src/feed/tail/tail-fan-out.js';
import { projectKey } from '../../../../src/feed/tail/tail-matching.js';
import type { TailStream } from '../../../../src/feed/tail/tail-stream.js';
import { NIL_UUID } from '../../../../src/ids/uuid.js';
import { createLogger } from '../../../../src/observability/logger.js';
import type { EventStore, TailPosition } from '../../../../src/store/event-store.js';
import { uuid } from '../../../support/factories.js';

/**
 * Time that moves only when the test moves it. The poller has one loop, and the store
 * below sleeps on this clock for as long as a read takes, so while a sleep is pending
 * nothing else can happen until time moves: that is when the test moves it, to the
 * earliest sleep's end or the next thing it scheduled.
 */
function virtualClock() {
  let now = 0;
  const sleeps = new Set<{ readonly until: number; readonly wake: () => void }>();
  const scheduled: { readonly at: number; readonly run: () => void }[] = [];
  let slept: (() => void) | undefined;
  const clock: PollerClock = {
    now: () => now,
    sleep(ms, signal) {
      return new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const sleep = {
          until: now + ms,
          wake: () => {
            sleeps.delete(sleep);
            signal.removeEventListener('abort', sleep.wake);
            resolve();
          },
        };
        sleeps.add(sleep);
        signal.addEventListener('abort', sleep.wake, { once: true });
        slept?.();
      });
    },
  };
  return {
    clock,
    /** Runs `run` once the clock reaches `at`. */
    schedule(at: number, run: () => void): void {
      scheduled.push({ at, run });
    },
    /** Resolves once something sleeps on the clock. */
    asleep(): Promise<void> {
      if (sleeps.size > 0) return Promise.resolve();
      return new Promise((resolve) => {
        slept = () => {
          slept = undefined;
          resolve();
        };
      });
    },
    /** Moves to the next sleep's end or scheduled call, runs the calls due, then wakes the sleeps due. */
    step(): void {
      const next = Math.min(...[...sleeps].map((s) => s.until), ...scheduled.map((s) => s.at));
      if (next === Infinity) throw new Error('nothing sleeps or is scheduled on the virtual clock');
      now = Math.max(now, next);
      for (const call of scheduled.filter((s) => s.at <= now)) {
        scheduled.splice(scheduled.indexOf(call), 1);
        call.run();
      }
      for (const sleep of [...sleeps]) if (sleep.until <= now) sleep.wake();
    },
  };
}

/** What each shared read does, by its number from 1: return rows below a full window, fill it, or fail. */
type ReadOutcome = 'partial' | 'full' | 'fails';

const HORIZON = '2026-01-01 00:00:00.000';
const START: TailPosition = { ingestedAt: HORIZON, id: NIL_UUID };

/**
 * A shared poller with one live stream, over a store whose shared reads take `readMs` on
 * the virtual clock and end as `outcome` says; it records when (virtual ms) each read started.
 */
function pollerOnVirtualTime(options: { pollMs: number; settleMs: number; readMs?: number; outcome?: (read: number) => ReadOutcome }) {
  const { pollMs, settleMs, readMs = 0, outcome = () => 'partial' } = options;
  const time = virtualClock();
  const closed = new AbortController();
  const readStarts: number[] = [];
  const notRead = () => Promise.reject(new Error('the shared poller reads only tailProjects, with the horizon it is given'));
  const store: EventStore = {
    insertEvents: notRead,
    probeWrite: notRead,
    listEvents: notRead,
    tailHorizon: notRead,
    tailEvents: notRead,
    changedProjects: notRead,
    writtenEvents: notRead,
    async tailProjects(query) {
      const read = readStarts.push(time.clock.now());
      if (readMs > 0) await time.clock.sleep(readMs, closed.signal);
      const ends = outcome(read);
      if (ends === 'fails') throw new Error('the store is down');
      return { events: [], next: query.after, full: ends === 'full' };
    },
  };
  const listeners = new Set<Parameters<StoredBatches['onStored']>[0]>();
  const stored: Pick<StoredBatches, 'onStored'> = {
    onStored(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  const logger = createLogger('silent');
  const fanOut = createTailFanOut({ settings: { heartbeatMs: 3_600_000, maxBufferBytes: 1 << 20 }, logger, changed: () => {} });
  const poller = createSharedPoller({
    store,
    settings: { pollMs, settleMs },
    logger,
    fanOut,
    horizon: async () => ({ text: HORIZON, askedAt: time.clock.now() }),
    stored,
    closed: closed.signal,
    clock: time.clock,
  });
  const orgId = uuid();
  const projectId = uuid();
  const stream: TailStream = {
    request: { orgId, projectId, caller: 'dashboard', filters: {}, after: undefined },
    sink: { send() {}, heartbeat() {}, queuedBytes: 0, drained: async () => {}, end() {} },
    key: projectKey(orgId, projectId),
    controller: new AbortController(),
    joinedAt: undefined,
    lastLine: performance.now(),
    notice: undefined,
  };

  return {
    /** The stream joins at virtual 0, which starts the loop. */
    async join(): Promise<void> {
      expect(await poller.tryJoin(stream, START)).to.equal(true);
    },
    /** This process stores a batch at `at`: the insert returns then. */
    storesAt(at: number): void {
      time.schedule(at, () => {
        for (const listener of listeners) listener(at, [], true);
      });
    },
    /** Moves the virtual clock, each time the loop rests or reads, until `count` reads have started; their start times. */
    async readsStartedAt(count: number): Promise<number[]> {
      // Bounded: a loop that no longer reads fails here instead of moving time forever.
      for (let steps = 0; steps < 10 * count; steps++) {
        await Promise.race([
          time.asleep(),
          poller.stopped().then(() => {
            throw new Error('the shared loop stopped');
          }),
        ]);
        if (readStarts.length >= count) return readStarts.slice(0, count);
        time.step();
      }
      throw new Error(`only ${readStarts.length} of ${count} reads started: ${readStarts.join(', ')}`);
    },
    async close(): Promise<void> {
      closed.abort();
      stream.controller.abort();
      await poller.stopped();
    },
  };
}

describe('shared poller: when its reads start, on a virtual clock', () => {
  let poller: ReturnType<typeof pollerOnVirtualTime> | undefined;

  afterEach(async () => {
    await poller?.close();
    poller = undefined;
  });

  it('keeps its rhythm start to start: reads of 300 ms at a 1 s interval start 1 s apart, not 1.3 s', async () => {
    poller = pollerOnVirtualTime({ pollMs: 1000, settleMs: 0, readMs: 300 });
    await poller.join();
    expect(await poller.readsStartedAt(5)).to.deep.equal([0, 1000, 2000, 3000, 4000]);
  });

  it('reads once a batch this process stored is due (its return, the settle window and 5 ms), before the next interval, but never within MIN_READ_GAP_MS of the last read', async () => {
    poller = pollerOnVirtualTime({ pollMs: 1000, settleMs: 300 });
    await poller.join();
    // Due at 405, while the loop rests until 1000: it reads then.
    poller.storesAt(100);
    // Due at 455, 50 ms after the read at 405 began: it waits until 100 ms after it.
    poller.storesAt(150);
    expect(await poller.readsStartedAt(4)).to.deep.equal([0, 405, 405 + MIN_READ_GAP_MS, 405 + MIN_READ_GAP_MS + 1000]);
  });

  it('with an interval shorter than MIN_READ_GAP_MS, a batch coming due never pushes the read past the interval', async () => {
    poller = pollerOnVirtualTime({ pollMs: 50, settleMs: 0 });
    await poller.join();
    // Due at 15: sooner than the interval's 50, but the gap is the interval here.
    poller.storesAt(10);
    expect(await poller.readsStartedAt(4)).to.deep.equal([0, 50, 100, 150]);
  });

  it('after failed reads, waits the interval doubled for each failure in a row (pollMs · 2^failures), up to MAX_RETRY_DELAY_MS, not cut short by a batch coming due, then keeps its rhythm again', async () => {
    poller = pollerOnVirtualTime({ pollMs: 1000, settleMs: 300, outcome: (read) => (read >= 2 && read <= 5 ? 'fails' : 'partial') });
    await poller.join();
    // Due at 1805, in the first backoff (1000 to 3000).
    poller.storesAt(1500);
    // The timeline below is written for a 5 s cap.
    expect(MAX_RETRY_DELAY_MS).to.equal(5000);
    // Failures at 1000, 3000, 7000 and 12000: backoffs of 2 s, 4 s, then 5 s twice; a success at 17000, and the interval after it.
    expect(await poller.readsStartedAt(7)).to.deep.equal([0, 1000, 3000, 7000, 12000, 17000, 18000]);
  });

  it('after a failed read, never retries sooner than one interval, when the interval is longer than MAX_RETRY_DELAY_MS', async () => {
    poller = pollerOnVirtualTime({ pollMs: 8000, settleMs: 0, outcome: (read) => (read === 2 ? 'fails' : 'partial') });
    await poller.join();
    expect(await poller.readsStartedAt(4)).to.deep.equal([0, 8000, 16000, 24000]);
  });

  it('reads again at once after a read that filled its window, and keeps the interval from the last read that did not', async () => {
    poller = pollerOnVirtualTime({ pollMs: 1000, settleMs: 0, readMs: 300, outcome: (read) => (read === 2 || read === 3 ? 'full' : 'partial') });
    await poller.join();
    expect(await poller.readsStartedAt(6)).to.deep.equal([0, 1000, 1300, 1600, 2600, 3600]);
  });
});
