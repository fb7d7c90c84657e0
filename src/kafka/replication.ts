import kafkajs, { type Admin } from 'kafkajs';
import type { KafkaConfig } from './kafka-settings.js';
import { untilKnown } from './topics.js';

// kafkajs is CommonJS, and Node finds only some of its exports by name (this one not): take it from the module object.
const { ConfigResourceTypes } = kafkajs;

/** How many copies a topic keeps and how many must hold a write before it is acknowledged. */
export interface Replication {
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
}

/**
 * Three copies of which two acknowledge each write: one broker can be lost (crashed, or
 * restarted for an upgrade) without refusing a write or losing an acknowledged one.
 */
const PRODUCTION = { replicationFactor: 3, minInsyncReplicas: 2 } as const;

/**
 * The replication of the topics the gateway creates. A configured value is taken as it is;
 * an unset one follows the number of brokers the cluster has now: with three or more,
 * three copies and two in sync, as production wants; with fewer, a copy per broker and one
 * in sync, since a single test broker cannot hold more.
 */
export function replicationFor(configured: Pick<KafkaConfig, 'replicationFactor' | 'minInsyncReplicas'>, brokers: number): Replication {
  const replicationFactor = configured.replicationFactor ?? Math.max(1, Math.min(PRODUCTION.replicationFactor, brokers));
  const minInsyncReplicas =
    configured.minInsyncReplicas ?? (replicationFactor >= PRODUCTION.replicationFactor ? PRODUCTION.minInsyncReplicas : 1);
  if (minInsyncReplicas > replicationFactor) {
    // Every acks=-1 write to such a topic would be refused; better not to start.
    throw new Error(`KAFKA_MIN_INSYNC_REPLICAS (${minInsyncReplicas}) exceeds the replication factor (${replicationFactor}) for ${brokers} broker(s)`);
  }
  return { replicationFactor, minInsyncReplicas };
}

/** A topic that keeps fewer copies, or needs fewer in sync, than the gateway asks for. */
export interface ReplicationShortfall {
  readonly topic: string;
  /** The fewest replicas any of its partitions has. */
  readonly replicas: number;
  readonly minInsyncReplicas: number | undefined;
}

/**
 * The topics among `topics` that are replicated less than `wanted`. Topics that existed
 * before the gateway started keep the replication they were created with, so this is how
 * an operator learns that acknowledged commands may sit on fewer brokers than configured.
 */
export async function replicationShortfalls(admin: Admin, topics: readonly string[], wanted: Replication): Promise<ReplicationShortfall[]> {
  const names = [...new Set(topics)];
  const metadata = await untilKnown(`metadata of ${names.join(', ')}`, () => admin.fetchTopicMetadata({ topics: names }));
  const configs = await untilKnown(`min.insync.replicas of ${names.join(', ')}`, () =>
    admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['min.insync.replicas'] })),
    }),
  );
  const minIsr = new Map<string, number>();
  for (const resource of configs.resources) {
    const value = resource.configEntries.find((entry) => entry.configName === 'min.insync.replicas')?.configValue;
    if (value !== undefined && /^\d+$/.test(value)) minIsr.set(resource.resourceName, Number(value));
  }
  const shortfalls: ReplicationShortfall[] = [];
  for (const topic of metadata.topics) {
    const replicas = Math.min(...topic.partitions.map((p) => p.replicas.length));
    const minInsyncReplicas = minIsr.get(topic.name);
    if (replicas < wanted.replicationFactor || (minInsyncReplicas !== undefined && minInsyncReplicas < wanted.minInsyncReplicas)) {
      shortfalls.push({ topic: topic.name, replicas, minInsyncReplicas });
    }
  }
  return shortfalls;
}
