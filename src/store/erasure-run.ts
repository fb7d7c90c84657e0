import type { ErasureRecord, ErasureStore } from './clickhouse-erasure.js';
import { tablesErasedFor } from './clickhouse-erasure.js';
import { describeScope, erasureId, normalizedScope, type ErasureScope } from './erasure-scope.js';
import type { ErasureConfig } from './erasure-settings.js';

export interface EraseRequest {
  readonly scope: ErasureScope;
  /** Who asked: the operator's identity, written into the audit record. */
  readonly requestedBy: string;
  readonly reason: string;
}

/** One step of a run, for the operator's progress lines. */
export type EraseStep =
  | { readonly kind: 'started' | 'resumed' | 'already-finished'; readonly record: ErasureRecord }
  | { readonly kind: 'waiting'; readonly untilMs: number; readonly why: 'suppression' | 'finish' }
  | { readonly kind: 'counted'; readonly events: number }
  | { readonly kind: 'deleted'; readonly table: string }
  | { readonly kind: 'stragglers'; readonly events: number; readonly pass: number }
  | { readonly kind: 'finished'; readonly record: ErasureRecord };

export interface EraseOutcome {
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
 * The scope was erased and holds events again (written after its suppression ended): a
 * second erasure of one scope is not built (its record would replace the first's audit), and
 * answering "already finished" would tell the operator the data is gone when it is not.
 */
export class ErasedScopeWrittenAgainError extends Error {
  override readonly name = 'ErasedScopeWrittenAgainError';
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
 * The same scope is the same erasure: a run on a running record resumes it (the deletes are
 * idempotent), a run on a finished one removes nothing and says so.
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

  const found = await store.find(scope);
  if (found?.status === 'finished') {
    const since = await store.countEvents(scope);
    if (since > 0) {
      throw new ErasedScopeWrittenAgainError(
        `${describeScope(scope)} was erased (finished ${new Date(found.finishedAtMs!).toISOString()}) and holds ${since} events again, written after its suppression ended; erasing one scope a second time is not supported: nothing was deleted`,
      );
    }
    progress({ kind: 'already-finished', record: found });
    return { record: found, removedNow: 0, alreadyFinished: true };
  }
  let record: ErasureRecord;
  if (found === undefined) {
    const startedAtMs = now();
    record = {
      erasureId: erasureId(scope),
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
    progress({ kind: 'started', record });
  } else {
    // Resumed as first asked: who, why and since when stay the first request's.
    record = found;
    progress({ kind: 'resumed', record });
  }

  await waitUntil(record.startedAtMs + 2 * settings.pollMs + (options.inFlightMs ?? 0), 'suppression');
  const counted = await store.countEvents(scope);
  progress({ kind: 'counted', events: counted });
  // A resumed run counts only what the first left: the first's count stands.
  record = { ...record, eventsRemoved: Math.max(record.eventsRemoved, counted) };
  await store.save(record);
  let removedNow = counted;
  for (let pass = 1; ; pass++) {
    for (const table of tablesErasedFor(scope)) {
      await store.deleteFrom(table.name, scope);
      progress({ kind: 'deleted', table: table.name });
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
  return { record, removedNow, alreadyFinished: false };
}
