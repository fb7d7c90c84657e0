import { createHash } from 'node:crypto';
import type { SqlParam } from './sql-transport.js';

/**
 * What one erasure removes: every event of an organization, of one of its projects, or of
 * one device (within a project when one is given). Ids are kept lower-case, as the store
 * keeps them, so that a scope compares with stored rows as text.
 */
export interface ErasureScope {
  readonly orgId: string;
  readonly projectId?: string | undefined;
  readonly deviceId?: string | undefined;
}

/** The scope with its ids lower-case, and without the parts that are absent. */
export function normalizedScope(scope: ErasureScope): ErasureScope {
  return {
    orgId: scope.orgId.toLowerCase(),
    ...(scope.projectId === undefined ? {} : { projectId: scope.projectId.toLowerCase() }),
    ...(scope.deviceId === undefined ? {} : { deviceId: scope.deviceId.toLowerCase() }),
  };
}

/**
 * The id of a scope's `ordinal`-th erasure (1 for its first), the same for the same scope
 * and ordinal every time: a second run of the command finds the record it started and
 * resumes or reports it, so a run cut short (a crash, a lost terminal) is finished by
 * running the same command again, and two operators who start the same next erasure at
 * once write one record, not two. A SHA-256 of the scope (and, past the first, the ordinal)
 * written as a UUID (version 8, RFC 9562's custom form); a first erasure's id is the one
 * records written before erasures could repeat already carry.
 */
export function erasureId(scope: ErasureScope, ordinal = 1): string {
  if (!Number.isInteger(ordinal) || ordinal < 1) throw new RangeError(`an erasure's ordinal is a positive integer, not ${ordinal}`);
  const s = normalizedScope(scope);
  const hash = createHash('sha256').update(`erasure/${s.orgId}/${s.projectId ?? '*'}/${s.deviceId ?? '*'}${ordinal === 1 ? '' : `/${ordinal}`}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x80;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** A text equal for two scopes exactly when they are the same scope (the same org, project and device, or the same absence of them). */
export function scopeKey(scope: ErasureScope): string {
  const s = normalizedScope(scope);
  return `${s.orgId}/${s.projectId ?? '*'}/${s.deviceId ?? '*'}`;
}

/** What an event must name for a scope to cover it. */
export interface ScopedEvent {
  readonly org_id: string;
  readonly project_id: string;
  readonly device_id?: string | null | undefined;
}

/** Whether the scope covers the event: the same organization, and the same project and device where the scope names them. */
export function scopeCovers(scope: ErasureScope, event: ScopedEvent): boolean {
  return (
    scope.orgId === event.org_id.toLowerCase() &&
    (scope.projectId === undefined || scope.projectId === event.project_id.toLowerCase()) &&
    (scope.deviceId === undefined || (event.device_id != null && scope.deviceId === event.device_id.toLowerCase()))
  );
}

/** The scope as a WHERE condition on a table with org_id, project_id and (for a device scope) device_id columns, and its parameters. */
export function scopeCondition(scope: ErasureScope): { where: string; params: Record<string, SqlParam> } {
  const s = normalizedScope(scope);
  const conditions = ['org_id = {erase_org:UUID}'];
  const params: Record<string, SqlParam> = { erase_org: s.orgId };
  if (s.projectId !== undefined) {
    conditions.push('project_id = {erase_project:UUID}');
    params['erase_project'] = s.projectId;
  }
  if (s.deviceId !== undefined) {
    conditions.push('device_id = {erase_device:UUID}');
    params['erase_device'] = s.deviceId;
  }
  return { where: conditions.join(' AND '), params };
}

/** The scope as a person reads it, for progress lines and logs. */
export function describeScope(scope: ErasureScope): string {
  return [`org ${scope.orgId}`, ...(scope.projectId === undefined ? [] : [`project ${scope.projectId}`]), ...(scope.deviceId === undefined ? [] : [`device ${scope.deviceId}`])].join(', ');
}
