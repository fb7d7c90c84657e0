import type { ErasureRecord, ErasureStore } from './clickhouse-erasure.js';
import { describeScope, erasureId, normalizedScope, type ErasureScope } from './erasure-scope.js';
import type { ErasureConfig } from './erasure-settings.js';

export interface EraseRequest {
  readonly scope: ErasureScope;
  /** Who asked: the operator's identity, written into the audit record. */
  readonly requestedBy: string;
  readonly reason: string;
}

/** Which erasure of its scope a record is, and the one before it. */
export interface ErasureOrdinal {
  /** 1 for a scope's first erasure, 2 for the one that erased it again, and so on. */
  readonly ordinal: number;
  /** The scope's erasure before this one, finished; undefined for a first. */
  readonly previous: ErasureRecord | undefined;
}

/** One step of a run, for the operator's progress lines. */
export type EraseStep =
  | ({ readonly kind: 'started' | 'resumed' | 'already-finished'; readonly record: ErasureRecord } & ErasureOrdinal)
  | { readonly kind: 'waiting'; readonly untilMs: number; readonly why: 'suppression' | 'finish' }
  | { readonly kind: 'counted'; readonly events: number }
  | { readonly kind: 'deleted'; readonly table: string }
  | { readonly kind: 'stragglers'; readonly events: number; readonly pass: number }
  | { readonly kind: 'finished'; readonly record: ErasureRecord };

export interface EraseOutcome extends ErasureOrdinal {
  readonly record: ErasureRecord;
  /** Events this run removed: 0 for an erasure already finished. */
  readonly removedNow: number;
  readonly alreadyFinished: boolean;
}

/** A run that deleted and still found the scope's events, pass after pass: it stays running, and the same command resumes it. */
export class ErasureIncompleteError extends Error {
  override readonly name = 'ErasureIncompleteError';
}

/**
 * Delete passes before a run gives up: the first takes what the count found, a second what a
 * batch validated before its gateway saw the suppression wrote after the count (a store
 * retry can hold one back that long); a third finding more means something still writes
 * the scope, which a rerun reports again rather than a done that is not true.
 */
const MAX_PASSES = 3;

const DAY_MS = 86_400_000;

export interface EraseOptions {
  readonly store: ErasureStore;
  readonly settings: ErasureConfig;
  readonly progress?: ((step: EraseStep) => void) | undefined;
  /**
   * The longest an insert may still be in flight once its gateway has seen the suppression:
   * one that passed the filter just before lands within the store client's request timeout
   * (CLICKHOUSE_REQUEST_TIMEOUT_MS) or fails. The count waits for it, so it counts what the
   * delete removes; 0 where nothing else writes (chDB, whose directory one process holds).
   */
  readonly inFlightMs?: number | undefined;
  /** The clock, and the wait for it; real time unless a test gives its own. */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * Erases a scope's events (docs/decisions/erasure.md):
 * 1. the record is written, status running: from the moment each gateway reads it (within
 *    ERASURE_POLL_MS) its ingest drops the scope's events and its live tails hide them;
 * 2. it waits until two poll intervals have passed since, and an insert's longest flight, so
 *    no gateway still writes the scope;
 * 3. it counts the scope's events, records the count, and deletes the scope's rows from every
 *    table derived from events, then counts again and deletes again what a late batch wrote;
 * 4. the record is written finished, and it waits two poll intervals more, so every gateway
 *    has seen it finish and dropped the first pages it kept, before it returns.
 * A run goes by the scope's newest erasure: a running one is resumed (the deletes are
 * idempotent); a finished one whose scope holds no event is reported, removing nothing; a
 * finished one whose scope holds events again (written after its suppression ended) is
 * followed by a new erasure of the scope, with its own record and suppression, the earlier
 * records left as they are.
 */
export async function runErasure(request: EraseRequest, options: EraseOptions): Promise<EraseOutcome> {
  const { store, settings } = options;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const progress = options.progress ?? (() => undefined);
  const scope = normalizedScope(request.scope);
  const waitUntil = async (untilMs: number, why: 'suppression' | 'finish') => {
    const left = untilMs - now();
    if (left <= 0) return;
    progress({ kind: 'waiting', untilMs, why });
    await sleep(left);
  };

  const history = await store.history(scope);
  const latest = history.at(-1);
  // "Finished" is a promise that the scope holds nothing: kept only while it is still true.
  if (latest?.status === 'finished' && (await store.countEvents(scope)) === 0) {
    const ordinal = { ordinal: history.length, previous: history.at(-2) };
    progress({ kind: 'already-finished', record: latest, ...ordinal });
    return { record: latest, removedNow: 0, alreadyFinished: true, ...ordinal };
  }
  let record: ErasureRecord;
  let ordinal: ErasureOrdinal;
  if (latest === undefined || latest.status === 'finished') {
    // A new erasure, never a new version of the last: its audit stays as it was written.
    let next = history.length + 1;
    while (history.some((r) => r.erasureId === erasureId(scope, next))) next++;
    ordinal = { ordinal: next, previous: latest };
    const startedAtMs = now();
    record = {
      erasureId: erasureId(scope, next),
      scope,
      requestedBy: request.requestedBy,
      reason: request.reason,
      status: 'running',
      requestedAtMs: startedAtMs,
      startedAtMs,
      finishedAtMs: undefined,
      eventsRemoved: 0,
      suppressUntilMs: startedAtMs + settings.suppressDays * DAY_MS,
    };
    await store.save(record);
    progress({ kind: 'started', record, ...ordinal });
  } else {
    // Resumed as first asked: who, why and since when stay the first request's.
    record = latest;
    ordinal = { ordinal: history.length, previous: history.at(-2) };
    progress({ kind: 'resumed', record, ...ordinal });
  }

  await waitUntil(record.startedAtMs + 2 * settings.pollMs + (options.inFlightMs ?? 0), 'suppression');
  const counted = await store.countEvents(scope);
  progress({ kind: 'counted', events: counted });
  // A resumed run counts only what the first left: the first's count stands.
  record = { ...record, eventsRemoved: Math.max(record.eventsRemoved, counted) };
  await store.save(record);
  let removedNow = counted;
  for (let pass = 1; ; pass++) {
    for (const table of await store.tablesFor(scope)) {
      await store.deleteFrom(table, scope);
      progress({ kind: 'deleted', table });
    }
    const left = await store.countEvents(scope);
    // Every table, not only events: a row a view wrote for a late batch is the scope's too.
    if (left === 0 && Object.values(await store.rowsLeft(scope)).every((rows) => rows === 0)) break;
    progress({ kind: 'stragglers', events: left, pass });
    removedNow += left;
    record = { ...record, eventsRemoved: record.eventsRemoved + left };
    await store.save(record);
    if (pass >= MAX_PASSES) {
      throw new ErasureIncompleteError(`${describeScope(scope)}: ${left} events were written again after ${pass} delete passes; is something still writing this scope? Run the command again to resume.`);
    }
  }
  record = { ...record, status: 'finished', finishedAtMs: now() };
  await store.save(record);
  await waitUntil(record.finishedAtMs! + 2 * settings.pollMs, 'finish');
  progress({ kind: 'finished', record });
  return { record, removedNow, alreadyFinished: false, ...ordinal };
}
