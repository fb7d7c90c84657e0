import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../errors/app-error.js';
import type { CanonicalEvent } from '../generated/schema-types.js';
import { NIL_UUID } from '../ids/uuid.js';
import type { Logger } from '../observability/logger.js';
import type { EventStore, TailBatch, TailFilters, TailPosition } from '../store/event-store.js';
import { encodeTailPosition } from './tail-position.js';

export interface LiveTailSettings {
  /** Only rows ingested at least this long ago are read: concurrent inserts become visible out of ingested_at order. */
  readonly settleMs: number;
  readonly pollMs: number;
  /** A comment line goes out after this long without any other line, so proxies keep the connection. */
  readonly heartbeatMs: number;
  /** Open streams per organization on this process. */
  readonly maxPerOrg: number;
}

export interface TailRequest {
  readonly orgId: string;
  readonly projectId: string;
  readonly filters: TailFilters;
  /** Resume strictly after this position (Last-Event-ID); undefined starts at the horizon, so only new events come. */
  readonly after: TailPosition | undefined;
  /** The request's logger, so a failing poll's log lines carry its request id; the service's own otherwise. */
  readonly log?: Logger | undefined;
}

export interface TailMessage {
  /** The opaque position token of the event, for Last-Event-ID. */
  readonly id: string;
  readonly event: CanonicalEvent;
}

/** Where a stream's messages go; the HTTP layer frames them as Server-Sent Events. */
export interface TailSink {
  /** Resolves once the transport has room again (backpressure). */
  events(batch: readonly TailMessage[]): Promise<void>;
  heartbeat(): Promise<void>;
  /** The tail stopped: end the response. */
  end(): void;
}

export interface TailHandle {
  /** Stops the loop, e.g. because the client went away; the sink is ended. */
  stop(): void;
  /** Resolves once the loop has ended and its slot is free again. */
  readonly done: Promise<void>;
}

export interface LiveTail {
  /**
   * Takes one of the organization's slots, fixes where the tail starts and runs its poll
   * loop until stopped. Throws TOO_MANY_STREAMS when the organization has no slot left,
   * and UPSTREAM_UNAVAILABLE while closing or when the store cannot tell its clock.
   */
  start(request: TailRequest, sink: TailSink): Promise<TailHandle>;
  /** Ends every open stream and waits until each loop has stopped; starts after this are refused. */
  closeAll(): Promise<void>;
}

/** Rows per poll: a catching-up stream reads in steps of this and polls again at once. */
export const TAIL_BATCH_ROWS = 500;
const MAX_RETRY_DELAY_MS = 5000;
// A slot frees only when one of the organization's streams closes; retrying at once would just be refused again.
const FULL_RETRY_AFTER_SECONDS = 5;

function shuttingDown(): AppError {
  return new AppError('UPSTREAM_UNAVAILABLE', 'Shutting down', { detail: 'This gateway is shutting down; reconnect to continue.' });
}

/** Waits, but never past an abort. */
async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    // Aborted: the loop checks the signal next.
  }
}

/** Settles with `work`, or as soon as `signal` aborts: a client that stopped reading must not hold a stop up. */
async function unlessAborted(work: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  let onAbort = () => {};
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve;
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

export function createLiveTail(deps: { store: EventStore; settings: LiveTailSettings; logger: Logger }): LiveTail {
  const { store, settings, logger } = deps;
  const perOrg = new Map<string, number>();
  const open = new Set<TailHandle>();
  let closing = false;

  function takeSlot(orgId: string): () => void {
    if (closing) throw shuttingDown();
    const count = perOrg.get(orgId) ?? 0;
    if (count >= settings.maxPerOrg) {
      throw new AppError('TOO_MANY_STREAMS', 'Too many streams', {
        detail: `This organization already has ${settings.maxPerOrg} live tails open on this gateway; close one, or retry after Retry-After.`,
        retryAfterSeconds: FULL_RETRY_AFTER_SECONDS,
      });
    }
    perOrg.set(orgId, count + 1);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      const left = (perOrg.get(orgId) ?? 1) - 1;
      if (left > 0) perOrg.set(orgId, left);
      else perOrg.delete(orgId);
    };
  }

  async function run(request: TailRequest, start: TailPosition, sink: TailSink, signal: AbortSignal): Promise<void> {
    const scope = { orgId: request.orgId, projectId: request.projectId, filters: request.filters };
    const log = request.log ?? logger;
    let position = start;
    let lastLine = performance.now();
    let failures = 0;
    while (!signal.aborted) {
      let batch: TailBatch | undefined;
      try {
        const before = await store.tailHorizon(settings.settleMs);
        batch = await store.tailEvents({ ...scope, after: position, before, limit: TAIL_BATCH_ROWS });
        failures = 0;
      } catch (error) {
        if (signal.aborted) break;
        failures += 1;
        // The stream stays open and keeps its heartbeat; the store is asked again after a backoff.
        log.warn({ err: error, orgId: request.orgId, projectId: request.projectId, failures }, 'live tail poll failed; retrying');
      }
      if (signal.aborted) break;
      if (batch !== undefined) {
        if (batch.events.length > 0) {
          const messages = batch.events.map((e) => ({ id: encodeTailPosition(e.position), event: e.event }));
          await unlessAborted(sink.events(messages), signal);
          lastLine = performance.now();
        }
        position = batch.next;
        if (batch.full) continue;
      }
      if (performance.now() - lastLine >= settings.heartbeatMs) {
        await unlessAborted(sink.heartbeat(), signal);
        lastLine = performance.now();
      }
      const delay = failures === 0 ? settings.pollMs : Math.max(settings.pollMs, Math.min(MAX_RETRY_DELAY_MS, settings.pollMs * 2 ** failures));
      const untilHeartbeat = Math.max(0, lastLine + settings.heartbeatMs - performance.now());
      await pause(Math.min(delay, untilHeartbeat), signal);
    }
  }

  return {
    async start(request, sink) {
      const freeSlot = takeSlot(request.orgId);
      let start: TailPosition;
      try {
        // (horizon, NIL) sorts before every event ingested at the horizon: they are all new to this stream.
        start = request.after ?? { ingestedAt: await store.tailHorizon(settings.settleMs), id: NIL_UUID };
        if (closing) throw shuttingDown();
      } catch (error) {
        freeSlot();
        throw error;
      }
      const controller = new AbortController();
      let finished = () => {};
      const handle: TailHandle = {
        stop: () => controller.abort(),
        done: new Promise<void>((resolve) => {
          finished = resolve;
        }),
      };
      open.add(handle);
      run(request, start, sink, controller.signal)
        .catch((error: unknown) => (request.log ?? logger).error({ err: error, orgId: request.orgId, projectId: request.projectId }, 'live tail stopped by a fault'))
        .finally(() => {
          sink.end();
          freeSlot();
          open.delete(handle);
          finished();
        });
      return handle;
    },
    async closeAll() {
      closing = true;
      const streams = [...open];
      for (const stream of streams) stream.stop();
      await Promise.all(streams.map((s) => s.done));
    },
  };
}
