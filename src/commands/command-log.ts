import type { CommandMessage } from './command-publisher.js';

/** Durable record of accepted commands; the embedded bus's stand-in for the command topics. */
export interface CommandLog {
  append(commands: readonly CommandMessage[]): Promise<void>;
}
