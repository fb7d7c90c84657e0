import { commandTopics } from '../commands/catalogue.js';
import type { Config } from '../config/config.js';

/**
 * The contract topics a process of this role touches, and so the ones its start checks:
 * a gateway writes the command topics; a consumer reads the event and command topics and
 * writes the dead-letter topic. Each role needs ACLs on its own topics only.
 */
export function topicsOfRole(config: Config): { readonly used: string[]; readonly written: string[] } {
  const { topics } = config;
  const commands = commandTopics(topics).map(({ topic }) => topic);
  switch (config.role) {
    case 'gateway':
      return { used: commands, written: commands };
    case 'consumer':
      return { used: [...topics.events, ...commands, topics.deadLetter], written: [topics.deadLetter] };
    case 'all':
      return { used: [...topics.events, ...commands, topics.deadLetter], written: [...commands, topics.deadLetter] };
  }
}
