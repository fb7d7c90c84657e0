import { catalogue, perTopicKey, type CommandTopicKey } from '../../src/commands/catalogue.js';

/** A name for each catalogue entry's command topic, by its key in config.topics. */
export type CommandTopicNames = Readonly<Record<CommandTopicKey, string>>;

/** Each command topic named for one run, from its default name (src/commands/catalogue/). */
export function commandTopicNames(name: (defaultName: string) => string): CommandTopicNames {
  return perTopicKey((topic) => name(topic.default));
}

/** The variables that point a gateway at these command topics. */
export function commandTopicEnvironment(names: CommandTopicNames): Record<string, string> {
  return Object.fromEntries(catalogue.map(({ topic }) => [topic.setting, names[topic.configKey]]));
}

/** The names as a list, in the catalogue's order. */
export function commandTopicList(names: CommandTopicNames): string[] {
  return catalogue.map(({ topic }) => names[topic.configKey]);
}
