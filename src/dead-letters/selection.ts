import type { DeadLetter } from './dead-letter.js';
import type { LetterScope } from './letter-scope.js';

/** Which dead letters a replay takes; an absent field selects everything. */
export interface Selection {
  readonly reasons: readonly string[] | undefined;
  /** Dead-lettered at or after (ms since the epoch). */
  readonly sinceMs: number | undefined;
  /** Dead-lettered before (ms since the epoch). */
  readonly untilMs: number | undefined;
  readonly sourceTopic: string | undefined;
  readonly sourcePartition: number | undefined;
  /** Source offsets, both ends included. */
  readonly sourceOffsets: { readonly from: bigint; readonly to: bigint } | undefined;
  readonly org: string | undefined;
  readonly project: string | undefined;
}

export const SELECT_ALL: Selection = {
  reasons: undefined,
  sinceMs: undefined,
  untilMs: undefined,
  sourceTopic: undefined,
  sourcePartition: undefined,
  sourceOffsets: undefined,
  org: undefined,
  project: undefined,
};

/** Whether the selection needs the letter's value parsed (organization or project). */
export const needsScope = (s: Selection): boolean => s.org !== undefined || s.project !== undefined;

/** Whether `letter` (whose value, transformed, has `scope`) is selected. */
export function selects(s: Selection, letter: DeadLetter, scope: LetterScope): boolean {
  if (s.reasons !== undefined && !s.reasons.includes(letter.reason)) return false;
  if (s.sinceMs !== undefined && !(letter.timestampMs >= s.sinceMs)) return false;
  if (s.untilMs !== undefined && !(letter.timestampMs < s.untilMs)) return false;
  const source = letter.source;
  if (s.sourceTopic !== undefined && source?.topic !== s.sourceTopic) return false;
  if (s.sourcePartition !== undefined && source?.partition !== s.sourcePartition) return false;
  if (s.sourceOffsets !== undefined && (source === undefined || source.offset < s.sourceOffsets.from || source.offset > s.sourceOffsets.to)) return false;
  if (s.org !== undefined && scope.org !== s.org) return false;
  if (s.project !== undefined && scope.project !== s.project) return false;
  return true;
}

/** The selection as one stable line: the same options in any order give the same text. */
export function describeSelection(s: Selection): string {
  const parts: string[] = [];
  if (s.reasons !== undefined) parts.push(`reason=${[...s.reasons].sort().join(',')}`);
  if (s.sinceMs !== undefined) parts.push(`since=${new Date(s.sinceMs).toISOString()}`);
  if (s.untilMs !== undefined) parts.push(`until=${new Date(s.untilMs).toISOString()}`);
  if (s.sourceTopic !== undefined) parts.push(`source-topic=${s.sourceTopic}`);
  if (s.sourcePartition !== undefined) parts.push(`source-partition=${s.sourcePartition}`);
  if (s.sourceOffsets !== undefined) parts.push(`source-offsets=${s.sourceOffsets.from}-${s.sourceOffsets.to}`);
  if (s.org !== undefined) parts.push(`org=${s.org}`);
  if (s.project !== undefined) parts.push(`project=${s.project}`);
  return parts.length === 0 ? 'all' : parts.join(' ');
}
