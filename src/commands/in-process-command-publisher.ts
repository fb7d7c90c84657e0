import type { CanonicalEvent } from '../generated/schema-types.js';
import type { Logger } from '../observability/logger.js';
import { createGroupCommit } from '../concurrency/group-commit.js';
import { REQUEST_ID_MESSAGE_HEADER } from './command-context.js';
import { commandEvent } from './command-event.js';
import type { CommandLog } from './command-log.js';
import type { CommandPublisher, PublishRequest } from './command-publisher.js';

const MAX_COMMANDS_PER_WRITE = 1000;

/**
 * The embedded bus: the command goes to the durable command log, then the event derived
 * from it goes through the same ingestor the Kafka consumer uses, into the store. Both
 * are written before publish() resolves, so a 2xx answer means nothing of it can be
 * lost. The command is written first: a crash in between leaves a command without its
 * feed event, never a feed event for a command that does not exist.
 *
 * Concurrent publishes share one command-log write and one event write (group commit),
 * in the order they came. One write per request and table had each request wait for its
 * own insert: on a ClickHouse server that is two async inserts per request through a
 * pool of ten connections, which held enroll at about 50 requests a second.
 */
/**
 * What the embedded bus hands each command's event to: the ingestor the Kafka consumer
 * uses (src/ingest/event-ingestor.ts), which the composition root passes in. Declared
 * here, by the side that calls it, since ingestion sits above commands.
 */
export interface CommandEventIngestor {
  ingestEvents(events: readonly CanonicalEvent[]): Promise<void>;
}

export interface InProcessCommandPublisherDeps {
  readonly log: CommandLog;
  readonly ingestor: CommandEventIngestor;
  readonly logger: Logger;
  /**
   * Whether a failed write was the store refusing the rows themselves (a value it cannot
   * parse, a broken constraint) rather than the store being unwell. Only the store's
   * adapter can tell; the composition root passes its verdict in.
   */
  readonly isRowRefusal: (error: unknown) => boolean;
}

export function createInProcessCommandPublisher(deps: InProcessCommandPublisherDeps): CommandPublisher {
  const logger = deps.logger.child({ module: 'in-process-bus' });
  const writes = createGroupCommit<PublishRequest>(
    async (requests) => {
      const commands = requests.map((r) => r.command);
      await deps.log.append(commands);
      await deps.ingestor.ingestEvents(commands.map((command) => commandEvent(command.value, command.headers['traceparent'])));
      // The same line the Kafka consumer writes, so a request id is followed the same way on either bus.
      for (const command of commands) {
        logger.info({ requestId: command.headers[REQUEST_ID_MESSAGE_HEADER], topic: command.topic }, 'command event stored');
      }
    },
    {
      maxItems: MAX_COMMANDS_PER_WRITE,
      // A row the store refuses fails only its own request; the others are written again
      // one by one, and a command logged twice keeps its command_id, which readers fold.
      isolate: deps.isRowRefusal,
    },
  );
  return {
    async publish(request) {
      await writes.write([request]);
      return { partition: null, offset: null };
    },
    async close() {
      await writes.drain();
    },
  };
}
