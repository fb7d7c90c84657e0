import type { ErasureRecord } from '../store/clickhouse-erasure.js';
import type { EraseOutcome, EraseStep, ErasureOrdinal } from '../store/erasure-run.js';
import { describeScope } from '../store/erasure-scope.js';

const at = (ms: number) => new Date(ms).toISOString();

const WORDS = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth', 'tenth'];

/** 2 → "second", 23 → "23rd": how the operator reads which erasure of its scope this is. */
export function nth(n: number): string {
  const word = WORDS[n - 1];
  if (word !== undefined) return word;
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/** For an erasure after the first, which it is and the one before it, so that the operator knows the scope was erased and written again. */
function again({ ordinal, previous }: ErasureOrdinal): string {
  if (ordinal === 1 || previous === undefined) return '';
  return `; the scope's ${nth(ordinal)} erasure, after ${previous.erasureId} (finished ${at(previous.finishedAtMs ?? previous.startedAtMs)}, ${previous.eventsRemoved} events removed)`;
}

/** A step of the run as the operator's progress line (stderr). */
export function progressLine(step: EraseStep): string {
  switch (step.kind) {
    case 'started':
      return `erase: ${step.record.erasureId} started (${describeScope(step.record.scope)})${again(step)}${step.ordinal > 1 ? ': it holds events written since' : ''}; its events arriving are dropped until ${at(step.record.suppressUntilMs)}`;
    case 'resumed':
      return `erase: ${step.record.erasureId} resumed, begun ${at(step.record.startedAtMs)} by ${step.record.requestedBy}${again(step)}`;
    case 'already-finished':
      return `erase: ${step.record.erasureId} finished before, at ${at(step.record.finishedAtMs ?? step.record.startedAtMs)}, and the scope holds no event: nothing to do${again(step)}`;
    case 'waiting':
      return step.why === 'suppression'
        ? `erase: waiting until ${at(step.untilMs)} for every gateway to apply the suppression and finish the inserts it began before (2 × ERASURE_POLL_MS + CLICKHOUSE_REQUEST_TIMEOUT_MS)`
        : `erase: waiting until ${at(step.untilMs)} for every gateway to see it finished and drop the pages it keeps`;
    case 'counted':
      return `erase: ${step.events} events to remove`;
    case 'deleted':
      return `erase: ${step.table}: the scope's rows deleted`;
    case 'stragglers':
      return `erase: ${step.events} events written meanwhile; deleting again (pass ${step.pass + 1})`;
    case 'finished':
      return `erase: ${step.record.erasureId} finished, ${step.record.eventsRemoved} events removed`;
  }
}

/** The audit record as the command's report (stdout), one JSON object. */
export function auditReport(record: ErasureRecord, outcome: Pick<EraseOutcome, 'removedNow' | 'alreadyFinished' | 'ordinal' | 'previous'>): string {
  return JSON.stringify({
    erasure_id: record.erasureId,
    org_id: record.scope.orgId,
    project_id: record.scope.projectId ?? null,
    device_id: record.scope.deviceId ?? null,
    requested_by: record.requestedBy,
    reason: record.reason,
    status: record.status,
    requested_at: at(record.requestedAtMs),
    started_at: at(record.startedAtMs),
    finished_at: record.finishedAtMs === undefined ? null : at(record.finishedAtMs),
    events_removed: record.eventsRemoved,
    removed_by_this_run: outcome.removedNow,
    already_finished: outcome.alreadyFinished,
    suppress_until: at(record.suppressUntilMs),
    erasure_of_scope: outcome.ordinal,
    previous_erasure_id: outcome.previous?.erasureId ?? null,
  });
}
