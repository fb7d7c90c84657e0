import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../errors/app-error.js';
import type { CanonicalEvent } from '../generated/schema-types.js';
import { NIL_UUID } from '../ids/uuid.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { EventStore, TailBatch, TailedEvent, TailFilters, TailPosition } from '../store/event-store.js';
import { createSharedReads } from './shared-reads.js';
import { encodeTailPosition } from './tail-position.js';

export interface LiveTailSettings {
  /** Only rows ingested at least this long ago are read: concurrent inserts become visible out of ingested_at order. */
  readonly settleMs: number;
  readonly pollMs: number;
  /** A comment line goes out after this long without any other line, so proxies keep the connection. */
  readonly heartbeatMs: number;
  /** Open streams per organization on this process. */
  readonly maxPerOrg: number;
  /** Open streams per caller (the token's subject) on this process, whichever organizations it names. */
  readonly maxPerCaller: number;
  /** Open streams on this process in all. */
  readonly maxPerProcess: number;
  /** Bytes a stream may have queued for a client that does not read them; past this it is closed (the client resumes). */
  readonly maxBufferBytes: number;
}

export interface TailRequest {
  readonly orgId: string;
  readonly projectId: string;
  /** Who opens it: the token's subject, for the per-caller cap. */
  readonly caller: string;
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
  /** The event's JSON text, made once per event however many streams send it. */
  readonly json: string;
}

/** Why the gateway ends a stream, told to the client as its last message. */
export interface ClosingNotice {
  readonly message: string;
  readonly detail: string;
}

/** Where a stream's messages go; the HTTP layer frames them as Server-Sent Events. */
export interface TailSink {
  /** Queues the messages for the client; never waits, so one slow client holds no one else up. */
  send(messages: readonly TailMessage[]): void;
  heartbeat(): void;
  /** Bytes queued for the client and not yet taken by its connection. */
  readonly queuedBytes: number;
  /** Resolves once the client has taken what was queued, or went away. */
  drained(): Promise<void>;
  /** The tail stopped: end the response, with `notice` as the last message when the gateway ends it. */
  end(notice?: ClosingNotice): void;
}

export interface TailHandle {
  /** Stops the stream, e.g. because the client went away; the sink is ended. */
  stop(): void;
  /** Resolves once the stream has ended and its slots are free again. */
  readonly done: Promise<void>;
}

export interface LiveTail {
  /**
   * Takes the stream's slots (process, caller, organization), fixes where the tail starts
   * and keeps it fed until stopped. Throws TOO_MANY_STREAMS when a cap is reached, and
   * UPSTREAM_UNAVAILABLE while closing or when the store cannot tell its clock.
   */
  start(request: TailRequest, sink: TailSink): Promise<TailHandle>;
  /** Ends every open stream and waits until each has stopped; starts after this are refused. */
  closeAll(): Promise<void>;
  /** What is open now, for metrics and tests. */
  readonly stats: { readonly streams: number; readonly live: number; readonly catchingUp: number; readonly projects: number };
}

/** Rows per private poll: a stream catching up reads in steps of this and polls again at once. */
export const TAIL_BATCH_ROWS = 500;
/** Rows per shared read: every tailed project's new rows of one poll interval fit in one read at thousands of events a second. */
export const SHARED_BATCH_ROWS = 5000;
const MAX_RETRY_DELAY_MS = 5000;
// A slot frees only when a stream closes; retrying at once would just be refused again.
const FULL_RETRY_AFTER_SECONDS = 5;

export const SLOW_READER_NOTICE: ClosingNotice = {
  message: 'Client too slow',
  detail: 'This client read more slowly than its events came, so the gateway closed the stream. Reconnect with Last-Event-ID to resume after the last event received.',
};
const SHUTDOWN_NOTICE: ClosingNotice = {
  message: 'Shutting down',
  detail: 'This gateway is shutting down. Reconnect with Last-Event-ID to resume after the last event received.',
};

function shuttingDown(): AppError {
  return new AppError('UPSTREAM_UNAVAILABLE', 'Shutting down', { detail: 'This gateway is shutting down; reconnect to continue.' });
}

function tooMany(detail: string): AppError {
  return new AppError('TOO_MANY_STREAMS', 'Too many streams', { detail, retryAfterSeconds: FULL_RETRY_AFTER_SECONDS });
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

/** Whether the filters take the event; the same rules as filter-sql.ts, on the event's stored (lower-case) ids. */
export function matchesFilters(filters: TailFilters, event: CanonicalEvent): boolean {
  return (
    (filters.domain === undefined || filters.domain === event.domain) &&
    (filters.entity === undefined || filters.entity === event.entity) &&
    (filters.action === undefined || filters.action === event.action) &&
    (filters.deviceId === undefined || filters.deviceId === event.device_id) &&
    (filters.fleetId === undefined || filters.fleetId === event.fleet_id)
  );
}

/**
 * Whether `p`, a position on a horizon (its id is NIL), is at or after `shared`. Positions
 * on a horizon are the only ones a stream joins the shared read at, so no UUID has to be
 * ordered here: (t, NIL) sorts before every event ingested at t.
 */
function horizonAtOrAfter(p: TailPosition, shared: TailPosition): boolean {
  return p.ingestedAt > shared.ingestedAt || (p.ingestedAt === shared.ingestedAt && shared.id === NIL_UUID);
}

/** Whether an event lies after (t, NIL): ingested after t, or at t with any id but NIL. */
function afterHorizon(event: TailPosition, p: TailPosition): boolean {
  return event.ingestedAt > p.ingestedAt || (event.ingestedAt === p.ingestedAt && event.id !== NIL_UUID);
}

const projectKey = (orgId: string, projectId: string) => `${orgId}/${projectId}`;
function scopeOf(key: string): { orgId: string; projectId: string } {
  const [orgId, projectId] = key.split('/') as [string, string];
  return { orgId, projectId };
}

interface Joiner {
  readonly stream: Stream;
  /** The horizon the stream has read up to. */
  readonly at: TailPosition;
  readonly resolve: (outcome: TailPosition | boolean) => void;
}

interface Stream {
  readonly request: TailRequest;
  readonly sink: TailSink;
  readonly key: string;
  readonly controller: AbortController;
  /** While live: the horizon it joined at; the shared read may bring rows up to it that it already had. */
  joinedAt: TailPosition | undefined;
  lastLine: number;
  /** Why the gateway ended it, if it did. */
  notice: ClosingNotice | undefined;
}

function messagesOf(events: readonly TailedEvent[]): TailMessage[] {
  return events.map((e) => ({ id: encodeTailPosition(e.position), event: e.event, json: JSON.stringify(e.event) }));
}

/**
 * The live tail (docs/decisions/live-tail.md). Streams share their reads: one loop per
 * process reads, once per poll interval, what became visible since its last read for
 * every project that has a live stream, and hands each stream the rows of its project
 * that match its filters. A stream that starts behind that shared position (a resume with
 * Last-Event-ID, or one that started while a read was in flight) first reads on its own,
 * as every stream did before, until it reaches a horizon at or after the shared position,
 * and joins there. So the store's reads per second depend on the number of streams
 * catching up, not on the number open.
 */
/** What the live tail reports on /metrics; the gateway's registry provides it. */
export type LiveTailMetrics = Pick<GatewayMetrics, 'tailStoreReads' | 'tailSlowClosed' | 'tailStreams'>;

export function createLiveTail(deps: { store: EventStore; settings: LiveTailSettings; logger: Logger; metrics?: LiveTailMetrics | undefined }): LiveTail {
  const { store, settings, logger, metrics } = deps;
  const perOrg = new Map<string, number>();
  const perCaller = new Map<string, number>();
  const open = new Map<Stream, Promise<void>>();
  /** Live streams by project. */
  const live = new Map<string, Set<Stream>>();
  let catchingUp = 0;
  let liveCount = 0;
  let closing = false;

  function report(): void {
    metrics?.tailStreams.set({ state: 'live' }, liveCount);
    metrics?.tailStreams.set({ state: 'catching_up' }, catchingUp);
  }

  // The shared read's state: where it has read up to, and the streams waiting to join it.
  // Only the shared loop moves the position and lets streams join, between its reads.
  let shared: TailPosition | undefined;
  let waiting: Joiner[] = [];
  let loop: Promise<void> = Promise.resolve();
  let looping = false;
  let nap = new AbortController();
  const closed = new AbortController();

  // One clock query for every stream starting at the same moment, and for the shared read beside them.
  const horizons = createSharedReads<string>();
  const horizon = () => horizons.read('horizon', () => store.tailHorizon(settings.settleMs));

  function count(map: Map<string, number>, key: string, by: number): void {
    const n = (map.get(key) ?? 0) + by;
    if (n > 0) map.set(key, n);
    else map.delete(key);
  }

  function takeSlots(request: TailRequest): () => void {
    if (closing) throw shuttingDown();
    if (open.size >= settings.maxPerProcess) {
      throw tooMany(`This gateway has ${settings.maxPerProcess} live tails open, as many as it serves; retry after Retry-After, or on another replica.`);
    }
    if ((perCaller.get(request.caller) ?? 0) >= settings.maxPerCaller) {
      throw tooMany(`This caller already has ${settings.maxPerCaller} live tails open on this gateway; close one, or retry after Retry-After.`);
    }
    if ((perOrg.get(request.orgId) ?? 0) >= settings.maxPerOrg) {
      throw tooMany(`This organization already has ${settings.maxPerOrg} live tails open on this gateway; close one, or retry after Retry-After.`);
    }
    count(perCaller, request.caller, 1);
    count(perOrg, request.orgId, 1);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      count(perCaller, request.caller, -1);
      count(perOrg, request.orgId, -1);
    };
  }

  function leave(stream: Stream): void {
    const streams = live.get(stream.key);
    if (streams === undefined || !streams.delete(stream)) return;
    if (streams.size === 0) live.delete(stream.key);
    liveCount -= 1;
    report();
  }

  /** Makes the stream live at `at`, at or after the shared position; in the shared loop only. */
  function join(stream: Stream, at: TailPosition): void {
    stream.joinedAt = at;
    let streams = live.get(stream.key);
    if (streams === undefined) live.set(stream.key, (streams = new Set()));
    streams.add(stream);
    liveCount += 1;
    report();
  }

  /**
   * Asks to join the shared read from `at`, a horizon the stream has read up to. The shared
   * loop answers before its next read: true once live; otherwise where the stream is now,
   * to go on with its own reads from there; false when the stream or the gateway closes.
   */
  function tryJoin(stream: Stream, at: TailPosition): Promise<TailPosition | boolean> {
    if (stream.controller.signal.aborted || closing) return Promise.resolve(false);
    return new Promise((resolve) => {
      waiting.push({ stream, at, resolve });
      if (!looping) {
        looping = true;
        loop = runShared();
      } else nap.abort();
    });
  }

  /**
   * Lets the waiting streams join, before the shared read moves on. Those at or after the
   * shared position join at once. Those behind it get the rows between from one read for
   * all of them, up to the shared position, which cannot move meanwhile: so joining needs
   * no race against the shared loop, and a reconnecting crowd costs one read, not one each.
   */
  async function admit(): Promise<void> {
    const joiners = waiting.filter((j) => !j.stream.controller.signal.aborted);
    for (const j of waiting) if (j.stream.controller.signal.aborted) j.resolve(false);
    waiting = [];
    if (joiners.length === 0) return;
    if (closing) {
      for (const j of joiners) j.resolve(false);
      return;
    }
    if (shared === undefined || live.size === 0) {
      // Nobody is live: the shared read starts at the earliest of them, the others filter up to their own start.
      shared = joiners.reduce((min, j) => (j.at.ingestedAt < min.ingestedAt ? j.at : min), joiners[0]!.at);
    }
    const from = shared;
    const behind: Joiner[] = [];
    for (const j of joiners) {
      if (horizonAtOrAfter(j.at, from)) {
        join(j.stream, j.at);
        j.resolve(true);
      } else behind.push(j);
    }
    if (behind.length === 0) return;
    // Mid-page, the shared position is a row: reading up to it would need rows of one instant ordered by id.
    if (from.id !== NIL_UUID) {
      for (const j of behind) j.resolve(j.at);
      return;
    }
    const after = behind.reduce((min, j) => (j.at.ingestedAt < min.ingestedAt ? j.at : min), behind[0]!.at);
    let gap: TailBatch;
    try {
      metrics?.tailStoreReads.inc({ kind: 'join' });
      gap = await store.tailProjects({
        scopes: [...new Set(behind.map((j) => j.stream.key))].map(scopeOf),
        after,
        before: from.ingestedAt,
        limit: SHARED_BATCH_ROWS,
      });
    } catch (error) {
      logger.warn({ err: error, streams: behind.length }, 'live tail join read failed; the streams read on their own');
      for (const j of behind) j.resolve(j.at);
      return;
    }
    // A full read covers every row ingested before its last row's instant: that instant is a horizon they can stand on.
    const upTo = gap.full ? { ingestedAt: gap.next.ingestedAt, id: NIL_UUID } : from;
    const messages = messagesOf(gap.events);
    for (const j of behind) {
      if (j.stream.controller.signal.aborted || closing) {
        j.resolve(false);
        continue;
      }
      const selected = messages.filter(
        (m, i) =>
          `${m.event.org_id}/${m.event.project_id}` === j.stream.key &&
          gap.events[i]!.position.ingestedAt < upTo.ingestedAt &&
          afterHorizon(gap.events[i]!.position, j.at) &&
          matchesFilters(j.stream.request.filters, m.event),
      );
      if (selected.length > 0) {
        j.stream.sink.send(selected);
        j.stream.lastLine = performance.now();
      }
      if (upTo === from) {
        join(j.stream, from);
        j.resolve(true);
      } else j.resolve(horizonAtOrAfter(j.at, upTo) ? j.at : upTo);
    }
  }

  /**
   * Closes a stream whose client has not taken what it was sent before: asked before each
   * write, so one large batch to a client that reads is never taken for slowness, and a
   * stream holds at most the bound plus one batch.
   */
  function tooSlow(stream: Stream): boolean {
    if (stream.controller.signal.aborted) return true;
    if (stream.sink.queuedBytes <= settings.maxBufferBytes) return false;
    stream.notice = SLOW_READER_NOTICE;
    metrics?.tailSlowClosed.inc();
    (stream.request.log ?? logger).info({ orgId: stream.request.orgId, projectId: stream.request.projectId, queuedBytes: stream.sink.queuedBytes }, 'live tail closed: client too slow');
    stream.controller.abort();
    return true;
  }

  function fanOut(events: readonly TailedEvent[]): void {
    const byProject = new Map<string, TailedEvent[]>();
    for (const e of events) {
      const key = projectKey(e.event.org_id, e.event.project_id);
      let list = byProject.get(key);
      if (list === undefined) byProject.set(key, (list = []));
      list.push(e);
    }
    const now = performance.now();
    for (const [key, projectEvents] of byProject) {
      const streams = live.get(key);
      if (streams === undefined) continue;
      const messages = messagesOf(projectEvents);
      for (const stream of streams) {
        const joinedAt = stream.joinedAt;
        const selected = messages.filter(
          (m, i) => (joinedAt === undefined || afterHorizon(projectEvents[i]!.position, joinedAt)) && matchesFilters(stream.request.filters, m.event),
        );
        if (selected.length === 0 || tooSlow(stream)) continue;
        stream.sink.send(selected);
        stream.lastLine = now;
      }
    }
  }

  function heartbeats(): void {
    const now = performance.now();
    for (const streams of live.values()) {
      for (const stream of streams) {
        if (now - stream.lastLine < settings.heartbeatMs || tooSlow(stream)) continue;
        stream.sink.heartbeat();
        stream.lastLine = now;
      }
    }
  }

  /** One shared read for every live stream, handed out. */
  async function readShared(): Promise<boolean> {
    const after = shared;
    if (after === undefined || live.size === 0) return false;
    const before = await horizon();
    metrics?.tailStoreReads.inc({ kind: 'shared' });
    const batch = await store.tailProjects({ scopes: [...live.keys()].map(scopeOf), after, before, limit: SHARED_BATCH_ROWS });
    fanOut(batch.events);
    shared = batch.next;
    return batch.full;
  }

  /** The one loop that reads for every live stream of this process, and lets streams join between its reads. */
  async function runShared(): Promise<void> {
    let failures = 0;
    // `looping` turns false in the same step as the last check, so a stream asking to join later starts a new loop.
    while ((live.size > 0 || waiting.length > 0) && !closing) {
      let full = false;
      try {
        await admit();
        full = await readShared();
        failures = 0;
      } catch (error) {
        failures += 1;
        // Every stream stays open and keeps its heartbeat; the store is asked again after a backoff.
        logger.warn({ err: error, failures, projects: live.size }, 'live tail shared read failed; retrying');
      }
      heartbeats();
      if (full) continue;
      const delay = failures === 0 ? settings.pollMs : Math.max(settings.pollMs, Math.min(MAX_RETRY_DELAY_MS, settings.pollMs * 2 ** failures));
      nap = new AbortController();
      // A stream asking to join wakes the loop: it should not wait a poll interval for its first rows.
      if (waiting.length === 0) await pause(delay, AbortSignal.any([nap.signal, closed.signal]));
    }
    looping = false;
    for (const j of waiting) j.resolve(false);
    waiting = [];
    if (live.size === 0) shared = undefined;
  }

  /** A stream's own reads, from its start until it joins the shared read; heartbeats included. */
  async function catchUp(stream: Stream, start: TailPosition): Promise<boolean> {
    const { request, sink } = stream;
    const signal = stream.controller.signal;
    const scope = { orgId: request.orgId, projectId: request.projectId, filters: request.filters };
    const log = request.log ?? logger;
    let position = start;
    let failures = 0;
    while (!signal.aborted && !closing) {
      // Only a position on a horizon can join: rows at the same instant need no UUID order in memory.
      if (position.id === NIL_UUID) {
        const joined = await tryJoin(stream, position);
        if (joined === true) return true;
        if (joined === false) break;
        if (joined !== position) {
          // It read part of the gap: let the client take that, then try again from there.
          position = joined;
          await unlessAborted(sink.drained(), signal);
          continue;
        }
        // The shared read is mid-page: read on alone past it.
      }
      let batch: TailBatch | undefined;
      try {
        const before = await horizon();
        metrics?.tailStoreReads.inc({ kind: 'own' });
        batch = await store.tailEvents({ ...scope, after: position, before, limit: TAIL_BATCH_ROWS });
        failures = 0;
      } catch (error) {
        if (signal.aborted) break;
        failures += 1;
        log.warn({ err: error, orgId: request.orgId, projectId: request.projectId, failures }, 'live tail poll failed; retrying');
      }
      if (signal.aborted) break;
      if (performance.now() - stream.lastLine >= settings.heartbeatMs) {
        sink.heartbeat();
        stream.lastLine = performance.now();
      }
      if (batch !== undefined) {
        if (batch.events.length > 0) {
          sink.send(messagesOf(batch.events));
          stream.lastLine = performance.now();
          // Catching up, a stream reads only as fast as its client takes the rows: its queue stays one batch.
          await unlessAborted(sink.drained(), signal);
        }
        position = batch.next;
        // More rows waiting, or on a horizon and so ready to join: go on at once.
        if (batch.full || position.id === NIL_UUID) continue;
      }
      // A failed read, or a resume position newer than the horizon: wait for the store or for time to pass.
      const delay = Math.max(settings.pollMs, Math.min(MAX_RETRY_DELAY_MS, settings.pollMs * 2 ** failures));
      await pause(delay, signal);
    }
    return false;
  }

  async function run(stream: Stream, start: TailPosition): Promise<void> {
    catchingUp += 1;
    report();
    let joined = false;
    try {
      joined = await catchUp(stream, start);
    } finally {
      catchingUp -= 1;
      report();
    }
    if (!joined) return;
    // Live: the shared loop feeds it until it is stopped.
    const signal = stream.controller.signal;
    if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    leave(stream);
  }

  return {
    async start(request, sink) {
      const freeSlots = takeSlots(request);
      let start: TailPosition;
      try {
        // (horizon, NIL) sorts before every event ingested at the horizon: they are all new to this stream.
        start = request.after ?? { ingestedAt: await horizon(), id: NIL_UUID };
        if (closing) throw shuttingDown();
      } catch (error) {
        freeSlots();
        throw error;
      }
      const stream: Stream = {
        request,
        sink,
        key: projectKey(request.orgId, request.projectId),
        controller: new AbortController(),
        joinedAt: undefined,
        lastLine: performance.now(),
        notice: undefined,
      };
      const done = run(stream, start)
        .catch((error: unknown) => (request.log ?? logger).error({ err: error, orgId: request.orgId, projectId: request.projectId }, 'live tail stopped by a fault'))
        .finally(() => {
          leave(stream);
          sink.end(stream.notice);
          freeSlots();
          open.delete(stream);
        });
      open.set(stream, done);
      return { stop: () => stream.controller.abort(), done };
    },
    async closeAll() {
      closing = true;
      for (const [stream] of open) {
        stream.notice ??= SHUTDOWN_NOTICE;
        stream.controller.abort();
      }
      closed.abort();
      await Promise.all([...open.values(), loop]);
    },
    get stats() {
      return { streams: open.size, live: liveCount, catchingUp, projects: live.size };
    },
  };
}
