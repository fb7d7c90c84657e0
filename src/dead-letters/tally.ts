import type { DeadLetter, SourcePosition } from './dead-letter.js';
import type { LetterScope } from './letter-scope.js';

/** What happened to one letter read. */
/** `no-target`: no source topic in its headers and no --to. */
export type Outcome = 'not-selected' | 'sent' | 'loop-guard' | 'truncated' | 'no-target';

/** How many truncated references a summary lists by position; the rest are counted. */
const LISTED_REFERENCES = 20;

const bump = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
const hourOf = (ms: number) => (Number.isFinite(ms) ? `${new Date(ms).toISOString().slice(0, 13)}:00Z` : 'unknown');

/** Counts of what a run read and did, kept as it goes and printed at the end. */
export class Tally {
  read = 0;
  selected = 0;
  sent = 0;
  loopGuarded = 0;
  truncated = 0;
  noTarget = 0;
  oldestMs: number | undefined;
  newestMs: number | undefined;
  readonly byReason = new Map<string, number>();
  readonly bySourceTopic = new Map<string, number>();
  readonly byOrg = new Map<string, number>();
  readonly byProject = new Map<string, number>();
  readonly byHour = new Map<string, number>();
  readonly selectedByReason = new Map<string, number>();
  readonly sentByReason = new Map<string, number>();
  /** Where the originals of truncated references lie, up to LISTED_REFERENCES of them. */
  readonly references: SourcePosition[] = [];

  add(letter: DeadLetter, scope: LetterScope, outcome: Outcome): void {
    this.read += 1;
    bump(this.byReason, letter.reason);
    bump(this.bySourceTopic, letter.source?.topic ?? 'unknown');
    bump(this.byOrg, scope.org ?? '(value not an event)');
    bump(this.byProject, scope.project ?? '(value not an event)');
    bump(this.byHour, hourOf(letter.timestampMs));
    if (Number.isFinite(letter.timestampMs)) {
      this.oldestMs = Math.min(this.oldestMs ?? letter.timestampMs, letter.timestampMs);
      this.newestMs = Math.max(this.newestMs ?? letter.timestampMs, letter.timestampMs);
    }
    if (outcome === 'not-selected') return;
    this.selected += 1;
    bump(this.selectedByReason, letter.reason);
    if (outcome === 'sent') {
      this.sent += 1;
      bump(this.sentByReason, letter.reason);
    } else if (outcome === 'loop-guard') {
      this.loopGuarded += 1;
    } else if (outcome === 'no-target') {
      this.noTarget += 1;
    } else {
      this.truncated += 1;
      if (letter.source !== undefined && this.references.length < LISTED_REFERENCES) this.references.push(letter.source);
    }
  }
}

const when = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString());

function histogram(title: string, counts: ReadonlyMap<string, number>): string[] {
  const rows = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return [`${title}:`, ...rows.map(([key, n]) => `  ${String(n).padStart(8)}  ${key}`)];
}

/** What `inspect` prints: counts by reason, source topic, organization, project and hour. */
export function inspectReport(t: Tally): string {
  return [
    `dead letters: ${t.read}, oldest ${when(t.oldestMs)}, newest ${when(t.newestMs)}`,
    ...histogram('by reason', t.byReason),
    ...histogram('by source topic', t.bySourceTopic),
    ...histogram('by organization', t.byOrg),
    ...histogram('by project', t.byProject),
    ...histogram('by hour dead-lettered', new Map([...t.byHour].sort((a, b) => a[0].localeCompare(b[0])))),
  ].join('\n');
}

/** What `replay` prints at the end. */
export function replaySummary(t: Tally, run: { readonly group: string; readonly maxReplays: number }): string {
  const reasons = [...t.byReason.keys()].sort();
  const lines = [
    `run ${run.group}: read ${t.read}, selected ${t.selected}, sent ${t.sent}, skipped by the loop guard ${t.loopGuarded} (dlq-replay-count >= ${run.maxReplays}), truncated references not sent ${t.truncated}`,
    ...(t.noTarget > 0 ? [`${t.noTarget} selected letter(s) name no source topic: replay them with --to TOPIC`] : []),
    'by reason (read / selected / sent):',
    ...reasons.map((r) => `  ${r}: ${t.byReason.get(r) ?? 0} / ${t.selectedByReason.get(r) ?? 0} / ${t.sentByReason.get(r) ?? 0}`),
  ];
  if (t.truncated > 0) {
    lines.push(
      `${t.truncated} truncated reference(s) hold only a prefix of their message: the original lies on its source topic, at the offset below, while that topic keeps it; replay it from there.`,
      ...t.references.map((p) => `  ${p.topic} partition ${p.partition} offset ${p.offset}`),
    );
    if (t.truncated > t.references.length) lines.push(`  ... and ${t.truncated - t.references.length} more`);
  }
  return lines.join('\n');
}
