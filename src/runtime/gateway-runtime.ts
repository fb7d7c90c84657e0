import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { CommandEnvironment } from '../commands/command-context.js';
import type { CommandPublisher } from '../commands/command-publisher.js';
import { createEnrollDevice } from '../commands/enroll-device.js';
import { createInProcessCommandPublisher } from '../commands/in-process-command-publisher.js';
import { createUpdateEdgePolicy } from '../commands/update-edge-policy.js';
import type { Config } from '../config.js';
import { createCursorCodec } from '../feed/cursor.js';
import { createFeedService } from '../feed/feed-service.js';
import { createApp } from '../http/app.js';
import { createEventIngestor, type EventIngestor } from '../ingest/event-ingestor.js';
import type { Logger } from '../logger.js';
import { createSchemaRegistry } from '../schemas/schema-registry.js';
import { createClickHouseCommandLog } from '../store/clickhouse-command-log.js';
import { createClickHouseEventStore } from '../store/clickhouse-event-store.js';
import { createClickHouseIdempotencyStore } from '../store/clickhouse-idempotency-store.js';
import { createVerifier } from './auth-runtime.js';
import { loadOrCreateSecret } from './secrets.js';
import { openStore } from './store-runtime.js';

export interface Runtime {
  /** Base URL of the HTTP server, e.g. http://127.0.0.1:8080 (absent for ROLE=consumer). */
  readonly url: string | undefined;
  /** The ingest side of the bus: events given here are validated and stored as the consumer stores them. */
  readonly ingestor: EventIngestor;
  /** Stops accepting requests, finishes those in flight, then closes the bus and the store. */
  close(): Promise<void>;
}

const systemEnvironment: CommandEnvironment = { now: () => new Date(), newId: randomUUID };

function cursorKey(config: Config, logger: Logger): Buffer {
  if (config.cursorSecret !== undefined) return Buffer.from(config.cursorSecret);
  if (config.clickhouse === undefined) {
    return Buffer.from(loadOrCreateSecret(resolve(config.dataDir, 'cursor-secret')).secret);
  }
  logger.warn('CURSOR_SECRET is not set: cursors are valid only on this process until it restarts');
  return randomBytes(32);
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolveListen(server.address() as AddressInfo);
    });
  });
}

/** Composition root: builds every adapter from the configuration and wires them together. */
export async function startRuntime(config: Config, logger: Logger, env: CommandEnvironment = systemEnvironment): Promise<Runtime> {
  const schemas = createSchemaRegistry();
  const transport = await openStore(config);
  const store = createClickHouseEventStore(transport);
  const ingestor = createEventIngestor({ store, schemas });
  const publisher: CommandPublisher = createInProcessCommandPublisher({ log: createClickHouseCommandLog(transport), ingestor });

  const app = createApp({
    logger,
    verifier: createVerifier(config, logger),
    schemas,
    feed: createFeedService({ store, cursors: createCursorCodec(cursorKey(config, logger)) }),
    enroll: createEnrollDevice({
      publisher,
      idempotency: createClickHouseIdempotencyStore(transport),
      topic: config.topics.enrollmentCommands,
      env,
    }),
    updateEdgePolicy: createUpdateEdgePolicy({ publisher, topic: config.topics.edgePolicyCommands, env }),
  });
  const http = createServer(app.callback());
  const address = await listen(http, config.port, config.host);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${address.port}`;
  logger.info({ url, store: transport.kind, bus: 'in-process' }, 'gateway listening');

  return {
    url,
    ingestor,
    async close() {
      await new Promise<void>((done) => http.close(() => done()));
      await publisher.close();
      await transport.close();
    },
  };
}
