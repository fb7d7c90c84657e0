import type { IHeaders, Message } from 'kafkajs';
import { PROVENANCE_PREFIX, REPLAY_COUNT_HEADER, type DeadLetter } from './dead-letter.js';
import { stripConfluentPrefix } from './confluent-prefix.js';

/** The transforms a replay may apply, each named on the command line. */
export interface Transforms {
  readonly stripConfluentPrefix: boolean;
}

/** The letter's value after the transforms. */
export function transformedValue(letter: DeadLetter, transforms: Transforms): Buffer | null {
  const value = letter.message.value;
  if (value === null) return null;
  return transforms.stripConfluentPrefix ? stripConfluentPrefix(value) : value;
}

/**
 * The message sent back: key, (transformed) value and the headers it was received with,
 * without the dead-letter writer's own headers, plus how many times it has been replayed.
 * The count survives a second dead-lettering (the writer keeps the headers it received),
 * which is what the loop guard reads.
 */
export function replayMessage(letter: DeadLetter, transforms: Transforms): Message {
  const headers: IHeaders = {};
  for (const [name, value] of Object.entries(letter.message.headers ?? {})) {
    if (!name.startsWith(PROVENANCE_PREFIX) && value !== undefined) headers[name] = value;
  }
  headers[REPLAY_COUNT_HEADER] = String(letter.replayCount + 1);
  return { key: letter.message.key, value: transformedValue(letter, transforms), headers };
}
