import { setTimeout as pause } from 'node:timers/promises';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import type { RejectReason } from '../../../src/ingest/event-ingestor.js';
import { request } from '../../support/http-client.js';
import { committedOffsets, topicEnds, type ReceivedMessage } from '../../support/kafka-topics.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import type { Tenant } from '../../support/test-gateway.js';
import { wholeFeed } from './feed-helpers.js';
import { groupMembers } from './ingest-group.js';
import type { KafkaSuite, TopicReader } from './kafka-suite.js';

/**
 * How long a case waits for its messages to be accounted for. Past INGEST_STALL_MS (60 s by
 * default), so a partition that stopped shows as stalled on /metrics before the wait gives
 * up, and the failure says so.
 */
const SETTLE_MS = 90_000;
const POLL_MS = 250;

/** What must become of one produced message. */
export type Fate =
  /** A valid event: in the tenant's feed exactly once; `check` compares what was stored with what JSON.parse read. */
  | { readonly kind: 'feed'; readonly event: Pick<CanonicalEvent, 'id' | 'occurred_at'>; readonly check?: (stored: CanonicalEvent) => string | undefined }
  /** An invalid message: on the DLQ exactly once, with its source topic, partition and offset, for this reason. */
  | { readonly kind: 'dlq'; readonly reason: RejectReason }
  /** Written in a transaction that was aborted: in neither. */
  | { readonly kind: 'aborted'; readonly event?: Pick<CanonicalEvent, 'id' | 'occurred_at'> };

/** One produced message: where it landed, what it was, and what must become of it. */
export interface LedgerEntry {
  readonly label: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly fate: Fate;
}

/** An instant as microseconds since the epoch, as the store keeps it, whatever the spelling. */
function instant(text: string): string {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)$/i.exec(text);
  if (m === null) throw new Error(`not an RFC 3339 date-time: ${text}`);
  const seconds = Date.parse(`${m[1]}${m[3]}`) / 1000;
  return `${seconds}.${(m[2] ?? '').padEnd(6, '0').slice(0, 6)}`;
}

/** An event's identity within one tenant's feed: its id and its instant (org and project are the tenant's). */
export const identity = (e: Pick<CanonicalEvent, 'id' | 'occurred_at'>): string => `${e.id.toLowerCase()}@${instant(e.occurred_at)}`;

const at = (e: { partition: number; offset: bigint | string }): string => `${e.partition}/${String(e.offset)}`;
const describe = (e: LedgerEntry): string => `${e.label} at ${at(e)}`;

function listed(title: string, entries: readonly LedgerEntry[], show = 12): string[] {
  if (entries.length === 0) return [];
  const more = entries.length > show ? ` … and ${entries.length - show} more` : '';
  return [`${title} (${entries.length}): ${entries.slice(0, show).map(describe).join('; ')}${more}`];
}

/**
 * Waits until every entry is accounted for, then holds the ledger: every valid event in the
 * tenant's feed (read whole, through the gateway) exactly once and nothing else there; every
 * invalid message on the DLQ exactly once with its source and reason; every aborted message
 * in neither; the group committed to the end of every partition the case wrote to. While it
 * waits it samples `ingest_partition_stalled` and fails at once if one of those partitions
 * shows 1 while the store answers
 * (a feed read is the store answering). Failures name the case, the messages and where they are.
 */
export async function holdLedger(s: KafkaSuite, tenant: Tenant, deadLetters: TopicReader, title: string, entries: readonly LedgerEntry[]): Promise<void> {
  const topic = s.topics.events;
  const wantFeed = new Map<string, LedgerEntry & { fate: Extract<Fate, { kind: 'feed' }> }>();
  const wantDlq = new Map<string, LedgerEntry & { fate: Extract<Fate, { kind: 'dlq' }> }>();
  const aborted: LedgerEntry[] = [];
  const ours = new Map<string, LedgerEntry>();
  for (const e of entries) {
    if (ours.has(at(e))) throw new Error(`${title}: two messages placed at ${at(e)}: the producer's answer is wrong`);
    ours.set(at(e), e);
    if (e.fate.kind === 'feed') {
      const key = identity(e.fate.event);
      if (wantFeed.has(key)) throw new Error(`${title}: two valid messages share the identity ${key}: the case is wrong`);
      wantFeed.set(key, { ...e, fate: e.fate });
    } else if (e.fate.kind === 'dlq') wantDlq.set(at(e), { ...e, fate: e.fate });
    else aborted.push(e);
  }
  if (wantFeed.size + wantDlq.size + aborted.length !== entries.length) throw new Error(`${title}: the ledger does not add up`);

  const firstUnaccounted = (missing: readonly LedgerEntry[]): string[] => {
    const first = new Map<number, LedgerEntry>();
    for (const e of missing) if (!first.has(e.partition) || first.get(e.partition)!.offset > e.offset) first.set(e.partition, e);
    return first.size === 0 ? [] : [`first message not accounted for, per partition: ${[...first.values()].map(describe).join('; ')}`];
  };
  // The partitions this case wrote to: its ledger is theirs. (A stall elsewhere is the case that wrote there's to report.)
  const partitions = new Set(entries.map((e) => e.partition));
  const committedToEnd = async (): Promise<boolean> => {
    const ends = await topicEnds(s.kafka, topic);
    const committed = await committedOffsets(s.kafka, s.consumerGroup, topic);
    return [...partitions].every((p) => committed.get(p) === ends.get(p));
  };
  const offsetsReport = (): Promise<string> => offsetsAndHolders().catch((error: unknown) => `offsets and group not read: ${(error as Error).message}`);
  async function offsetsAndHolders(): Promise<string> {
    const ends = await topicEnds(s.kafka, topic);
    const committed = await committedOffsets(s.kafka, s.consumerGroup, topic);
    // Who holds the partitions: a member that holds some and never commits shows here.
    const group = await groupMembers(s.kafka, s.consumerGroup, topic);
    const holders = group.members.map((m) => `${m.memberId} holds [${m.partitions.join(', ')}]`).join('; ');
    return `committed / end per partition: ${[...ends].map(([p, end]) => `${p}: ${committed.get(p) ?? -1}/${end}`).join(', ')}\n  ingest group ${group.state}: ${holders || 'no members'}`;
  }

  // Messages that must not be on the DLQ and are, with the reason the consumer gave.
  const misplaced = (found: readonly ReceivedMessage[]): string[] => {
    const wrong = found.flatMap((m) => {
      const e = ours.get(`${m.headers['dlq-source-partition']}/${m.headers['dlq-source-offset']}`);
      return e && e.fate.kind !== 'dlq' ? [`${describe(e)} as ${m.headers['dlq-reason']} (${m.headers['dlq-detail']})`] : [];
    });
    return wrong.length === 0 ? [] : [`${wrong.length} not invalid, yet on the DLQ: ${wrong.slice(0, 12).join('; ')}`];
  };
  let feed: CanonicalEvent[] = [];
  let letters: ReceivedMessage[] = [];
  /** The feed's last refusal: a 503 while the store is slow to answer a read says nothing of what was ingested, so the poll goes on. */
  let feedError: unknown;
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const metrics = parseMetrics((await request('GET', new URL('/metrics', s.gateway.baseUrl).toString())).text);
    try {
      feed = await wholeFeed(s.gateway, tenant);
      feedError = undefined;
    } catch (error) {
      feedError = error;
    }
    letters = deadLetters.messages.filter((m) => m.headers['dlq-source-topic'] === topic && ours.has(`${m.headers['dlq-source-partition']}/${m.headers['dlq-source-offset']}`));
    const inFeed = new Set(feed.map(identity));
    const lettered = new Set(letters.map((m) => `${m.headers['dlq-source-partition']}/${m.headers['dlq-source-offset']}`));
    const missingFeed = [...wantFeed].filter(([key]) => !inFeed.has(key)).map(([, e]) => e);
    const missingDlq = [...wantDlq.values()].filter((e) => !lettered.has(at(e)));
    const stalled = samplesOf(metrics, 'ingest_partition_stalled', { topic }).filter((m) => m.value === 1 && partitions.has(Number(m.labels['partition'])));
    const stalledNote = stalled.length > 0 ? `partition(s) ${stalled.map((m) => m.labels['partition']).join(', ')} of ${topic} show ingest_partition_stalled 1 while the store answers` : undefined;
    if (stalledNote === undefined && feedError === undefined && missingFeed.length === 0 && missingDlq.length === 0) {
      if (await committedToEnd()) break;
    }
    // Only after this round's answers: a round that finds every message accounted for passes, however late it ends.
    const waiting = stalledNote ?? (Date.now() > deadline ? `timed out after ${SETTLE_MS} ms` : undefined);
    if (waiting !== undefined) {
      throw new Error([
        `${title}: ${waiting}; ${entries.length} messages produced`,
        ...(feedError === undefined ? [] : [`the feed's last answer: ${(feedError as Error).message}`]),
        ...listed('valid, missing from the feed', missingFeed),
        ...listed('invalid, missing from the DLQ', missingDlq),
        ...misplaced(letters),
        ...firstUnaccounted([...missingFeed, ...missingDlq]),
        await offsetsReport(),
      ].join('\n  '));
    }
    await pause(POLL_MS);
  }

  const problems: string[] = [];
  const counts = new Map<string, number>();
  for (const e of feed) counts.set(identity(e), (counts.get(identity(e)) ?? 0) + 1);
  const abortedByIdentity = new Map(aborted.flatMap((e) => (e.fate.kind === 'aborted' && e.fate.event ? [[identity(e.fate.event), e] as const] : [])));
  for (const [key, n] of counts) {
    const want = wantFeed.get(key);
    if (want === undefined) {
      const was = abortedByIdentity.get(key);
      problems.push(was ? `aborted, yet in the feed: ${describe(was)}` : `in the feed, never produced as valid: ${key}`);
    } else if (n !== 1) problems.push(`in the feed ${n} times: ${describe(want)}`);
  }
  for (const stored of feed) {
    const want = wantFeed.get(identity(stored));
    const wrong = want?.fate.check?.(stored);
    if (want && wrong) problems.push(`stored wrong: ${describe(want)}: ${wrong}`);
  }
  const letterCounts = new Map<string, ReceivedMessage[]>();
  for (const m of letters) {
    const key = `${m.headers['dlq-source-partition']}/${m.headers['dlq-source-offset']}`;
    letterCounts.set(key, [...(letterCounts.get(key) ?? []), m]);
  }
  for (const [key, found] of letterCounts) {
    const entry = ours.get(key)!;
    if (entry.fate.kind !== 'dlq') {
      problems.push(`${entry.fate.kind === 'aborted' ? 'aborted' : 'valid'}, yet on the DLQ (${found[0]!.headers['dlq-reason']}: ${found[0]!.headers['dlq-detail']}): ${describe(entry)}`);
      continue;
    }
    if (found.length !== 1) problems.push(`on the DLQ ${found.length} times: ${describe(entry)}`);
    const reason = found[0]!.headers['dlq-reason'];
    if (reason !== entry.fate.reason) problems.push(`on the DLQ as ${reason} (${found[0]!.headers['dlq-detail']}), not ${entry.fate.reason}: ${describe(entry)}`);
  }
  if (problems.length > 0) {
    throw new Error([`${title}: the ledger does not hold (${problems.length}); ${entries.length} messages produced`, ...problems.slice(0, 20), await offsetsReport()].join('\n  '));
  }
}
