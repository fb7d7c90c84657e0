import type { EventIngestor } from '../ingest/event-ingestor.js';
import type { Logger } from '../logger.js';
import { REQUEST_ID_MESSAGE_HEADER } from './command-context.js';
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
export function createInProcessCommandPublisher(deps: { log: CommandLog; ingestor: EventIngestor; logger: Logger }): CommandPublisher {
  const logger = deps.logger.child({ module: 'in-process-bus' });
  return {
    async publish({ command }) {
      await deps.log.append([command]);
      await deps.ingestor.ingestEvents([commandEvent(command.value, command.headers['traceparent'])]);
      // The same line the Kafka consumer writes, so a request id is followed the same way on either bus.
      logger.info({ requestId: command.headers[REQUEST_ID_MESSAGE_HEADER], topic: command.topic }, 'command event stored');
    },
    async close() {},
  };
}
