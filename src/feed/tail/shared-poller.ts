import type { Logger } from '../../observability/logger.js';
import type { EventStore, TailPosition } from '../../store/event-store.js';
import { pause } from '../abortable-waits.js';
import type { LiveTailMetrics, LiveTailSettings } from './live-tail-types.js';
import type { StoredBatches } from '../stored-batches.js';
import type { TailFanOut } from './tail-fan-out.js';
import { admitAt, SHARED_BATCH_ROWS, type Joiner } from './tail-join.js';
import { scopeOf } from './tail-matching.js';
import type { TailStream } from './tail-stream.js';

export const MAX_RETRY_DELAY_MS = 5000;
/**
 * Reads that follow this process's own stored batches start at least this far apart, so
 * a consumer storing many small batches costs the store at most ten reads a second.
 */
export const MIN_READ_GAP_MS = 100;
/** Past a batch's return plus the settle window, by this much: the store's millisecond clock has moved past its ingested_at. */
const HORIZON_MARGIN_MS = 5;

/** The store's horizon, and when (the poller's clock) the store was asked for it. */
export interface StoreHorizon {
  readonly text: string;
  readonly askedAt: number;
}

/**
 * Where the poller reads the time and rests. `now()` must be the clock `horizon` and
 * `stored` report in (performance.now() in the gateway); tests pass a virtual one so the
 * rhythm of the reads can be checked to the millisecond without waiting for it.
 */
export interface PollerClock {
  now(): number;
  /** Resolves after `ms`, or as soon as `signal` aborts; never rejects. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

const MONOTONIC_CLOCK: PollerClock = { now: () => performance.now(), sleep: pause };

/** The one loop of a process that reads for every live stream, and lets streams join between its reads. */
export interface SharedPoller {
  /**
   * Asks to join the shared read from `at`, a horizon the stream has read up to. The loop
   * answers before its next read: true once live; otherwise where the stream is now, to
   * go on with its own reads from there; false when the stream or the gateway closes.
   */
  tryJoin(stream: TailStream, at: TailPosition): Promise<TailPosition | boolean>;
  /** Resolves once the loop has stopped (after `closed` aborts, or with no stream left). */
  stopped(): Promise<void>;
}

export function createSharedPoller(deps: {
  store: EventStore;
  settings: Pick<LiveTailSettings, 'pollMs' | 'settleMs'>;
  logger: Logger;
  metrics?: LiveTailMetrics | undefined;
  fanOut: TailFanOut;
  /** The store's horizon now, shared with the streams starting at the same moment. */
  horizon: () => Promise<StoreHorizon>;
  /** Where this process ingests: when its inserts return, so a read follows their rows past the horizon. */
  stored?: Pick<StoredBatches, 'onStored'> | undefined;
  /** Aborts when the gateway closes. */
  closed: AbortSignal;
  clock?: PollerClock | undefined;
}): SharedPoller {
  const { store, settings, logger, metrics, fanOut, horizon, closed } = deps;
  const clock = deps.clock ?? MONOTONIC_CLOCK;
  const closing = () => closed.aborted;
  // Where the shared read has read up to, and the streams waiting to join it.
  // Only the loop moves the position and lets streams join, between its reads.
  let shared: TailPosition | undefined;
  let waiting: Joiner[] = [];
  let loop: Promise<void> = Promise.resolve();
  let looping = false;
  let nap = new AbortController();
  // When, on the clock, each of this process's batches stored since the last read passes the horizon, in order.
  let due: number[] = [];
  // When the loop plans to read next, while it rests.
  let wakeAt = Infinity;
  const unsubscribe = deps.stored?.onStored((at) => {
    if (!looping) return;
    const t = at + settings.settleMs + HORIZON_MARGIN_MS;
    due.push(t);
    if (t < wakeAt) nap.abort('replan');
  });
  closed.addEventListener('abort', () => unsubscribe?.(), { once: true });

  async function admit(): Promise<void> {
    const joiners = waiting.filter((j) => !j.stream.controller.signal.aborted);
    for (const j of waiting) if (j.stream.controller.signal.aborted) j.resolve(false);
    waiting = [];
    if (joiners.length === 0) return;
    if (closing()) {
      for (const j of joiners) j.resolve(false);
      return;
    }
    if (shared === undefined || fanOut.size === 0) {
      // Nobody is live: the shared read starts at the earliest of them, the others filter up to their own start.
      shared = joiners.reduce((min, j) => (j.at.ingestedAt < min.ingestedAt ? j.at : min), joiners[0]!.at);
    }
    await admitAt(shared, joiners, { store, fanOut, logger, metrics, closing });
  }

  /** One shared read for every live stream, handed out; whether it filled its rows. */
  async function readShared(): Promise<boolean> {
    const after = shared;
    if (after === undefined || fanOut.size === 0) return false;
    const before = await horizon();
    // A batch whose due time (its store, the settle window and the margin) came before the
    // store was asked for this horizon lies below it: this read brings it.
    due = due.filter((t) => t > before.askedAt);
    metrics?.tailStoreReads.inc({ kind: 'shared' });
    const batch = await store.tailProjects({ scopes: [...fanOut.projects()].map(scopeOf), after, before: before.text, limit: SHARED_BATCH_ROWS });
    fanOut.send(batch.events);
    shared = batch.next;
    return batch.full;
  }

  /**
   * When the next read starts: one poll interval after the last one started, or as soon as
   * a batch this process stored passes the horizon, if that comes first (never closer than
   * MIN_READ_GAP_MS to the last start).
   */
  function nextRead(lastStarted: number): number {
    // Batches due before the last read began are that read's, or the next tick's if it
    // failed; dropping them here keeps the list short while the store is down (inserts
    // that fail are heard too, and no horizon is read to trim it).
    due = due.filter((t) => t > lastStarted);
    const tick = lastStarted + settings.pollMs;
    const first = due[0];
    return first === undefined || first >= tick ? tick : Math.max(first, lastStarted + Math.min(MIN_READ_GAP_MS, settings.pollMs));
  }

  /**
   * Rests until `until` (the clock), the gateway closing, or a stream asking to
   * join ('woken': it should not wait a poll interval for its first rows), or a stored
   * batch coming due sooner ('replan').
   */
  async function rest(until: number): Promise<'due' | 'woken' | 'replan'> {
    const ms = until - clock.now();
    if (waiting.length > 0) return 'woken';
    if (ms <= 0 || closing()) return 'due';
    nap = new AbortController();
    wakeAt = until;
    try {
      await clock.sleep(ms, AbortSignal.any([nap.signal, closed]));
    } finally {
      wakeAt = Infinity;
    }
    if (waiting.length > 0 || closing()) return 'woken';
    return nap.signal.aborted && nap.signal.reason === 'replan' ? 'replan' : 'due';
  }

  async function run(): Promise<void> {
    let failures = 0;
    // `looping` turns false in the same step as the last check, so a stream asking to join later starts a new loop.
    while ((fanOut.size > 0 || waiting.length > 0) && !closing()) {
      // Polls keep their rhythm start to start: the read's own time is not added to the interval.
      const started = clock.now();
      let full = false;
      try {
        await admit();
        full = await readShared();
        failures = 0;
      } catch (error) {
        failures += 1;
        // Every stream stays open and keeps its heartbeat; the store is asked again after a backoff.
        logger.warn({ err: error, failures, projects: fanOut.size }, 'live tail shared read failed; retrying');
      }
      fanOut.heartbeats();
      if (full) continue;
      if (failures > 0) {
        // The store failed: a batch coming due does not cut its backoff short.
        const retryAt = clock.now() + Math.max(settings.pollMs, Math.min(MAX_RETRY_DELAY_MS, settings.pollMs * 2 ** failures));
        while ((await rest(retryAt)) === 'replan');
        continue;
      }
      // A batch stored while it rests may come due before the planned read: it plans again.
      for (let wake = nextRead(started); (await rest(wake)) === 'replan'; ) wake = nextRead(started);
    }
    looping = false;
    due = [];
    for (const j of waiting) j.resolve(false);
    waiting = [];
    if (fanOut.size === 0) shared = undefined;
  }

  return {
    tryJoin(stream, at) {
      if (stream.controller.signal.aborted || closing()) return Promise.resolve(false);
      return new Promise((resolve) => {
        waiting.push({ stream, at, resolve });
        if (!looping) {
          looping = true;
          loop = run();
        } else nap.abort();
      });
    },
    stopped: () => loop,
  };
}
