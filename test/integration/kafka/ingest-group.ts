import { randomBytes } from 'node:crypto';
import { AssignerProtocol, type Kafka } from 'kafkajs';
import type { TestInfra } from '../../support/infra.js';
import { storeEnvironment } from '../../support/stores.js';
import { commandTopicEnvironment, commandTopicNames } from '../../support/command-topics.js';

/** A ROLE=consumer process's environment: topics and a group of its own, a database of its own on the suite's ClickHouse server. */
export interface ConsumerProcessSetup {
  readonly env: Record<string, string>;
  readonly topic: string;
  readonly groupId: string;
  readonly clickhouseUrl: string;
  readonly database: string;
}

export function consumerProcessSetup(infra: TestInfra, label: string, settings: Readonly<Record<string, string>>): ConsumerProcessSetup {
  const run = randomBytes(4).toString('hex');
  const topic = `platform.events.${label}.${run}`;
  const groupId = `core-gateway-ingest-${label}-${run}`;
  const store = storeEnvironment('clickhouse-server', infra.clickhouse?.url);
  const env = {
    ROLE: 'consumer',
    // The configuration asks every role outside the embedded default for a verifier; a consumer never uses it.
    AUTH_JWT_SECRET: randomBytes(32).toString('hex'),
    KAFKA_BROKERS: infra.brokers.join(','),
    ...store,
    EVENTS_TOPICS: topic,
    ...commandTopicEnvironment(commandTopicNames((name) => `${name}.${label}.${run}`)),
    EVENTS_DLQ_TOPIC: `platform.events.dlq.${label}.${run}`,
    KAFKA_CONSUMER_GROUP: groupId,
    SHUTDOWN_GRACE_MS: '2000',
    ...settings,
  };
  return { env, topic, groupId, clickhouseUrl: store['CLICKHOUSE_URL']!, database: store['CLICKHOUSE_DATABASE']! };
}

/** One member of a consumer group as the coordinator sees it, with the partitions of `topic` it holds. */
export interface GroupMember {
  readonly memberId: string;
  readonly partitions: readonly number[];
}

/** The group's members and their partitions of `topic`; empty while it has none or rebalances. */
export async function groupMembers(kafka: Kafka, groupId: string, topic: string): Promise<{ state: string; members: GroupMember[] }> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups([groupId]);
    const group = groups[0];
    if (group === undefined) return { state: 'Unknown', members: [] };
    const members = group.members.map((m) => {
      // A member between JoinGroup and SyncGroup has no assignment yet: an empty buffer.
      const decoded = m.memberAssignment.length === 0 ? null : AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
      return { memberId: m.memberId, partitions: [...(decoded?.assignment[topic] ?? [])].sort((a, b) => a - b) };
    });
    return { state: group.state, members };
  } finally {
    await admin.disconnect();
  }
}

/** A statement's rows from a database of the ClickHouse server, over its HTTP interface, bypassing the gateway entirely. */
export async function serverQuery<Row>(clickhouseUrl: string, database: string, sql: string): Promise<Row[]> {
  const url = new URL(clickhouseUrl);
  url.searchParams.set('database', database);
  const res = await fetch(url, { method: 'POST', body: `${sql} FORMAT JSONEachRow` });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse answered ${res.status}: ${text}`);
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Row);
}

/** How an organization's events sit in the store: raw rows (copies not yet merged), rows as folded by FINAL, distinct ids. */
export interface StoredCounts {
  readonly rawRows: number;
  readonly foldedRows: number;
  readonly distinctIds: number;
}

export async function storedCounts(clickhouseUrl: string, database: string, orgId: string): Promise<StoredCounts> {
  // UInt64 comes back quoted in JSON; the org id is a UUID we generated, so inlining it is safe.
  const where = `org_id = toUUID('${orgId}')`;
  const [raw] = await serverQuery<{ rows: string; ids: string }>(clickhouseUrl, database, `SELECT count() AS rows, uniqExact(id) AS ids FROM events WHERE ${where}`);
  const [folded] = await serverQuery<{ rows: string }>(clickhouseUrl, database, `SELECT count() AS rows FROM events FINAL WHERE ${where}`);
  return { rawRows: Number(raw!.rows), foldedRows: Number(folded!.rows), distinctIds: Number(raw!.ids) };
}

/** The ids stored for an organization, to tell which produced events are missing. */
export async function storedIds(clickhouseUrl: string, database: string, orgId: string): Promise<Set<string>> {
  const rows = await serverQuery<{ id: string }>(clickhouseUrl, database, `SELECT DISTINCT toString(id) AS id FROM events WHERE org_id = toUUID('${orgId}')`);
  return new Set(rows.map((r) => r.id));
}
