import type { Logger } from '../observability/logger.js';
import type { EventStore, TailPosition } from '../store/event-store.js';
import { pause } from './abortable-waits.js';
import type { LiveTailMetrics, LiveTailSettings } from './live-tail-types.js';
import type { TailFanOut } from './tail-fan-out.js';
import { admitAt, SHARED_BATCH_ROWS, type Joiner } from './tail-join.js';
import { scopeOf } from './tail-matching.js';
import type { TailStream } from './tail-stream.js';

export const MAX_RETRY_DELAY_MS = 5000;

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
  settings: Pick<LiveTailSettings, 'pollMs'>;
  logger: Logger;
  metrics?: LiveTailMetrics | undefined;
  fanOut: TailFanOut;
  /** The store's horizon now, shared with the streams starting at the same moment. */
  horizon: () => Promise<string>;
  /** Aborts when the gateway closes. */
  closed: AbortSignal;
}): SharedPoller {
  const { store, settings, logger, metrics, fanOut, horizon, closed } = deps;
  const closing = () => closed.aborted;
  // Where the shared read has read up to, and the streams waiting to join it.
  // Only the loop moves the position and lets streams join, between its reads.
  let shared: TailPosition | undefined;
  let waiting: Joiner[] = [];
  let loop: Promise<void> = Promise.resolve();
  let looping = false;
  let nap = new AbortController();

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
    metrics?.tailStoreReads.inc({ kind: 'shared' });
    const batch = await store.tailProjects({ scopes: [...fanOut.projects()].map(scopeOf), after, before, limit: SHARED_BATCH_ROWS });
    fanOut.send(batch.events);
    shared = batch.next;
    return batch.full;
  }

  async function run(): Promise<void> {
    let failures = 0;
    // `looping` turns false in the same step as the last check, so a stream asking to join later starts a new loop.
    while ((fanOut.size > 0 || waiting.length > 0) && !closing()) {
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
      const delay = failures === 0 ? settings.pollMs : Math.max(settings.pollMs, Math.min(MAX_RETRY_DELAY_MS, settings.pollMs * 2 ** failures));
      nap = new AbortController();
      // A stream asking to join wakes the loop: it should not wait a poll interval for its first rows.
      if (waiting.length === 0) await pause(delay, AbortSignal.any([nap.signal, closed]));
    }
    looping = false;
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
