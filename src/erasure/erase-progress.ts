import type { ErasureRecord } from '../store/clickhouse-erasure.js';
import type { EraseOutcome, EraseStep } from '../store/erasure-run.js';
import { describeScope } from '../store/erasure-scope.js';

const at = (ms: number) => new Date(ms).toISOString();

/** A step of the run as the operator's progress line (stderr). */
export function progressLine(step: EraseStep): string {
  switch (step.kind) {
    case 'started':
      return `erase: ${step.record.erasureId} started (${describeScope(step.record.scope)}); its events arriving are dropped until ${at(step.record.suppressUntilMs)}`;
    case 'resumed':
      return `erase: ${step.record.erasureId} resumed, begun ${at(step.record.startedAtMs)} by ${step.record.requestedBy}`;
    case 'already-finished':
      return `erase: ${step.record.erasureId} finished before, at ${at(step.record.finishedAtMs ?? step.record.startedAtMs)}: nothing to do`;
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
export function auditReport(record: ErasureRecord, outcome: Pick<EraseOutcome, 'removedNow' | 'alreadyFinished'>): string {
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
  });
}
