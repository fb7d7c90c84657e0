import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin } from 'kafkajs';

export interface TopicSpec {
  readonly names: readonly string[];
  readonly partitions: number;
  readonly replicationFactor: number;
  /** Set on each topic created, so its durability does not hang on the brokers' default. */
  readonly minInsyncReplicas: number;
}

/** Creates the topics that are missing; leaves existing ones as they are. */
export async function ensureTopics(admin: Admin, spec: TopicSpec): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = [...new Set(spec.names)].filter((name) => !existing.has(name));
  if (missing.length === 0) return [];
  try {
    await admin.createTopics({
      // Waited for below: kafkajs's own wait fails on a cluster of several brokers.
      waitForLeaders: false,
      topics: missing.map((topic) => ({
        topic,
        numPartitions: spec.partitions,
        replicationFactor: spec.replicationFactor,
        configEntries: [{ name: 'min.insync.replicas', value: String(spec.minInsyncReplicas) }],
      })),
    });
  } catch (error) {
    // Another process may have created them between listTopics and createTopics; kafkajs
    // reports that per topic inside an aggregate error.
    const nested = (error as { errors?: { type?: unknown }[] }).errors;
    const types = nested?.map((e) => e.type) ?? [(error as { type?: unknown }).type];
    if (!types.every((type) => type === 'TOPIC_ALREADY_EXISTS')) throw error;
  }
  await waitForLeaders(admin, missing);
  return missing;
}

/** How long a topic just created may take to be known, with a leader for every partition, on every broker. */
const KNOWN_TIMEOUT_MS = 30_000;
/** Answers that only mean "not yet" for a topic just created. */
const NOT_YET = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);

/**
 * Runs `attempt` until it returns a value, for at most `timeoutMs`. On a cluster of several
 * brokers a topic just created reaches each broker's metadata at its own moment, and a
 * broker that has not applied it yet answers UNKNOWN_TOPIC_OR_PARTITION, which kafkajs does
 * not retry (createTopics with waitForLeaders, describeConfigs); here that means "not yet".
 */
export async function untilKnown<T>(what: string, attempt: () => Promise<T | undefined>, timeoutMs = KNOWN_TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      if (!NOT_YET.has(String((error as { type?: unknown }).type))) throw error;
      last = error;
    }
    if (Date.now() >= deadline) throw new Error(`no ${what} after ${timeoutMs} ms`, { cause: last });
    await sleep(100);
  }
}

/** Waits until every partition of `topics` has a leader. */
export async function waitForLeaders(admin: Admin, topics: readonly string[], timeoutMs = KNOWN_TIMEOUT_MS): Promise<void> {
  await untilKnown(
    `leader for every partition of ${topics.join(', ')}`,
    async () => {
      const { topics: found } = await admin.fetchTopicMetadata({ topics: [...topics] });
      const led = found.filter((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
      return led.length === new Set(topics).size ? true : undefined;
    },
    timeoutMs,
  );
}
