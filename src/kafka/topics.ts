import type { Admin } from 'kafkajs';

export interface TopicSpec {
  readonly names: readonly string[];
  readonly partitions: number;
  readonly replicationFactor: number;
}

/** Creates the topics that are missing; leaves existing ones as they are. */
export async function ensureTopics(admin: Admin, spec: TopicSpec): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = [...new Set(spec.names)].filter((name) => !existing.has(name));
  if (missing.length === 0) return [];
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: missing.map((topic) => ({ topic, numPartitions: spec.partitions, replicationFactor: spec.replicationFactor })),
    });
  } catch (error) {
    // Another process may have created them between listTopics and createTopics; kafkajs
    // reports that per topic inside an aggregate error.
    const nested = (error as { errors?: { type?: unknown }[] }).errors;
    const types = nested?.map((e) => e.type) ?? [(error as { type?: unknown }).type];
    if (!types.every((type) => type === 'TOPIC_ALREADY_EXISTS')) throw error;
  }
  return missing;
}
