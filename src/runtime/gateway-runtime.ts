import { randomBytes, randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { resolve } from 'node:path';
import type { CommandEnvironment } from '../commands/command-context.js';
import type { CommandPublisher } from '../commands/command-publisher.js';
import type { IdempotencyStore } from '../commands/idempotency-store.js';
import { createEnrollDevice } from '../commands/enroll-device.js';
import { createInProcessCommandPublisher } from '../commands/in-process-command-publisher.js';
import { createUpdateEdgePolicy } from '../commands/update-edge-policy.js';
import type { Config } from '../config/config.js';
import { createCursorCodec } from '../feed/cursor.js';
import { createFeedService } from '../feed/feed-service.js';
import { createLiveTail } from '../feed/live-tail.js';
import { createApp, type ApiDependencies } from '../http/app.js';
import { createOrgRateLimiter } from '../http/org-rate-limiter.js';
import { createEventIngestor, type EventIngestor } from '../ingest/event-ingestor.js';
import { createKafkaReadiness } from '../kafka/kafka-readiness.js';
import type { Logger } from '../observability/logger.js';
import { createGatewayMetrics } from '../metrics/gateway-metrics.js';
import { NotReady, type ReadinessProbe } from '../observability/readiness.js';
import { createSchemaRegistry, type SchemaRegistry } from '../schemas/schema-registry.js';
import { createClickHouseCommandLog } from '../store/clickhouse-command-log.js';
import { createClickHouseEventStore } from '../store/clickhouse-event-store.js';
import type { EventStore } from '../store/event-store.js';
import { createVerifier } from './auth-runtime.js';
import { startHttpServer, type HttpServer } from './http-server.js';
import { kafkaCommandPublisher, openKafka, startIngestConsumer } from './kafka-runtime.js';
import { loadOrCreateSecret } from './secrets.js';
import { openIdempotencyStore, openStore } from './store-runtime.js';

export interface Runtime {
  /** Base URL of the HTTP server, e.g. http://127.0.0.1:8080 (health only for ROLE=consumer). */
  readonly url: string;
  /** Base URL of /healthz, /readyz and /metrics when OPS_PORT puts them on a port of their own. */
  readonly opsUrl: string | undefined;
  /** The ingest side: events given here are validated and stored as the consumer stores them. */
  readonly ingestor: EventIngestor;
  /** Stops taking requests and messages, finishes what is in flight, then closes Kafka and the store. */
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

function apiDependencies(
  config: Config,
  logger: Logger,
  env: CommandEnvironment,
  parts: { idempotency: IdempotencyStore; store: EventStore; publisher: CommandPublisher; schemas: SchemaRegistry },
): ApiDependencies {
  return {
    verifier: createVerifier(config, logger),
    schemas: parts.schemas,
    feed: createFeedService({ store: parts.store, cursors: createCursorCodec(cursorKey(config, logger)) }),
    liveTail: createLiveTail({ store: parts.store, settings: config.liveTail, logger }),
    enroll: createEnrollDevice({
      publisher: parts.publisher,
      idempotency: parts.idempotency,
      topic: config.topics.enrollmentCommands,
      env,
    }),
    rateLimiter: config.rateLimit === undefined ? undefined : createOrgRateLimiter(config.rateLimit),
    updateEdgePolicy: createUpdateEdgePolicy({ publisher: parts.publisher, topic: config.topics.edgePolicyCommands, env }),
  };
}

/**
 * Composition root. ROLE=all runs gateway and ingestion together: on the in-process bus
 * without KAFKA_BROKERS, through Kafka with it. ROLE=gateway and ROLE=consumer run one
 * side each (config.ts requires Kafka and a ClickHouse server for them).
 */
export async function startRuntime(config: Config, logger: Logger, env: CommandEnvironment = systemEnvironment): Promise<Runtime> {
  const transport = await openStore(config);
  const closers: (() => Promise<void>)[] = [() => transport.close()];
  const close = async () => {
    for (const step of [...closers].reverse()) await step();
  };
  try {
    const schemas = createSchemaRegistry();
    const store = createClickHouseEventStore(transport);
    const ingestor = createEventIngestor({ store, schemas });
    const metrics = createGatewayMetrics();
    let closing = false;
    const readiness: ReadinessProbe[] = [{ name: 'store', check: () => transport.ping() }];
    let kafka: Kafka | undefined;
    if (config.kafka !== undefined) {
      kafka = await openKafka(config, config.kafka, logger);
      const kafkaReadiness = createKafkaReadiness(config.kafka, logger);
      readiness.push(kafkaReadiness);
      closers.push(() => kafkaReadiness.close());
      if (config.role !== 'gateway') {
        const consumer = await startIngestConsumer(kafka, config, config.kafka, ingestor, metrics, logger);
        closers.push(() => consumer.stop());
      }
    }
    // Fails from the start of a shutdown, so a load balancer stops routing here while requests in flight finish.
    readiness.push({
      name: 'process',
      check: async () => {
        if (closing) throw new NotReady('shutting down');
      },
    });
    let api: ApiDependencies | undefined;
    if (config.role !== 'consumer') {
      const publisher =
        kafka === undefined || config.kafka === undefined
          ? createInProcessCommandPublisher({ log: createClickHouseCommandLog(transport), ingestor, logger })
          : kafkaCommandPublisher(kafka, config, config.kafka, metrics, logger);
      closers.push(() => publisher.close());
      const idempotency = await openIdempotencyStore(transport, config);
      logger.info({ compareAndSet: idempotency.compareAndSet }, idempotency.compareAndSet ? 'Idempotency-Key records in KeeperMap' : 'Idempotency-Key records in the idempotency_keys table');
      api = apiDependencies(config, logger, env, { idempotency, store, publisher, schemas });
    }
    const separateOps = config.opsPort !== undefined;
    let ops: HttpServer | undefined;
    if (config.opsPort !== undefined) {
      // The app with no API is the operations surface alone; it closes last, so probes see the shutdown.
      ops = await startHttpServer(createApp({ logger, api: undefined, readiness, metrics, withOpsRoutes: true }), config.opsPort, config.host, config.http);
      const opsServer = ops;
      closers.push(() => opsServer.close(0));
    }
    const http = await startHttpServer(createApp({ logger, api, readiness, metrics, withOpsRoutes: !separateOps }), config.port, config.host, config.http);
    // Requests in flight finish before the publisher behind them is flushed and closed.
    closers.push(() => http.close(config.shutdownGraceMs));
    // Open live tails never finish on their own: they end first, or the drain would wait out its whole grace on them.
    const liveTail = api?.liveTail;
    if (liveTail !== undefined) closers.push(() => liveTail.closeAll());
    closers.push(async () => {
      closing = true;
    });
    const url = http.url;
    const opsUrl = ops?.url;
    logger.info(
      { url, role: config.role, store: transport.kind, bus: config.kafka === undefined ? 'in-process' : 'kafka' },
      'core-gateway started',
    );
    return { url, opsUrl, ingestor, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
