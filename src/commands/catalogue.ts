import type { SchemaTypes } from '../schemas/schema-files.js';
import { edgePolicy } from './catalogue/edge-policy.js';
import { enrollment } from './catalogue/enrollment.js';
import type { CommandEntry } from './command-entry.js';

/**
 * The commands of the Core API, one entry each (src/commands/catalogue/). Routes, the
 * permission list, the topic lists, the consumer's sources and the OpenAPI and AsyncAPI
 * documents are derived from this list; the order is the documents' order.
 */
export const catalogue = [enrollment, edgePolicy] as const;

export type CatalogueEntry = (typeof catalogue)[number];
export type CommandName = CatalogueEntry['name'];
export type CommandPermission = CatalogueEntry['permission'];
/** The keys of config.topics that name command topics. */
export type CommandTopicKey = CatalogueEntry['topic']['configKey'];
/** A command message of any entry. */
export type GatewayCommand = SchemaTypes[CatalogueEntry['schemas']['command']];
/** What the consumer is told a topic holds: canonical events, or one entry's commands. */
export type CommandFormat = `${CommandName}-command`;

export const commandFormat = (entry: CommandEntry): CommandFormat => `${entry.name}-command` as CommandFormat;

/** The entry whose command messages have this format. */
export function entryOfFormat(format: CommandFormat): CatalogueEntry {
  const entry = catalogue.find((candidate) => commandFormat(candidate) === format);
  if (entry === undefined) throw new Error(`no catalogue entry reads ${format}`);
  return entry;
}

/** The entry whose command messages carry this `type`. */
export function entryOfType(type: string): CommandEntry | undefined {
  return catalogue.find((entry) => entry.type === type);
}

/** Each entry with the topic its commands go to under this configuration. */
export function commandTopics(topics: Readonly<Record<CommandTopicKey, string>>): { readonly entry: CommandEntry; readonly topic: string }[] {
  return catalogue.map((entry) => ({ entry, topic: topics[entry.topic.configKey] }));
}

/** One thing per entry, by name (each entry's handler, say). */
export function perCommand<T>(make: (entry: CatalogueEntry) => T): Readonly<Record<CommandName, T>> {
  return Object.fromEntries(catalogue.map((entry) => [entry.name, make(entry)])) as Record<CommandName, T>;
}

/** One thing per command topic, by its key in config.topics (its name under this configuration, say). */
export function perTopicKey<T>(make: (topic: CatalogueEntry['topic']) => T): Readonly<Record<CommandTopicKey, T>> {
  return Object.fromEntries(catalogue.map((entry) => [entry.topic.configKey, make(entry.topic)])) as Record<CommandTopicKey, T>;
}
