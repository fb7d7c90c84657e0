import { topicName } from '../kafka/kafka-settings.js';
import { integer, type Env } from '../settings/env.js';
import { perTopicKey, type CommandTopicKey } from './catalogue.js';

/** Each catalogue entry's topic, by its key in config.topics: the entry's setting names it, or its default does. */
export type CommandTopicsConfig = Readonly<Record<CommandTopicKey, string>>;

export function parseCommandTopics(env: Env): CommandTopicsConfig {
  return perTopicKey((command) => topicName(env, command.setting, command.default));
}

/** COMMAND_TIMEOUT_MS: the longest wait for Kafka to acknowledge a command before answering 503. */
export function parseCommandTimeout(env: Env): number {
  return integer(env, 'COMMAND_TIMEOUT_MS', 5000, 100, 120_000);
}
