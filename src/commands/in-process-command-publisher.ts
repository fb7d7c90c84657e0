import type { EventIngestor } from '../ingest/event-ingestor.js';
import { commandEvent } from './command-event.js';
import type { CommandLog } from './command-log.js';
import type { CommandPublisher } from './command-publisher.js';

/**
 * The embedded bus: the command goes to the durable command log, then the event derived
 * from it goes through the same ingestor the Kafka consumer uses, into the store. Both
 * are written before publish() resolves, so a 2xx answer means nothing of it can be
 * lost. The command is written first: a crash in between leaves a command without its
 * feed event, never a feed event for a command that does not exist.
 */
export function createInProcessCommandPublisher(deps: { log: CommandLog; ingestor: EventIngestor }): CommandPublisher {
  return {
    async publish({ command }) {
      await deps.log.append([command]);
      await deps.ingestor.ingestEvents([commandEvent(command.value, command.headers['traceparent'])]);
    },
    async close() {},
  };
}
