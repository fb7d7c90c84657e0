import { randomBytes, randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import type { CommandEnvironment } from '../commands/command-context.js';
import type { CommandPublisher } from '../commands/command-publisher.js';
import type { IdempotencyStore } from '../commands/idempotency-store.js';
import { perCommand } from '../commands/catalogue.js';
import type { CommandEntry } from '../commands/command-entry.js';
import { createCommandHandler, type CommandHandler } from '../commands/command-handler.js';
import { createInProcessCommandPublisher } from '../commands/in-process-command-publisher.js';
import type { Config } from '../config/config.js';
import { asyncApiDocument } from '../asyncapi/asyncapi-document.js';
import { openApiDocument } from '../openapi/openapi-document.js';
import { createCursorCodec } from '../feed/pages/cursor.js';
import { createFeedService } from '../feed/pages/feed-service.js';
import { firstPagesOf, type FirstPageCache } from '../feed/first-page-cache/first-page-cache.js';
import { watchFirstPages } from '../feed/first-page-cache/first-page-watch.js';
import { createLiveTail } from '../feed/tail/live-tail.js';
import { createStoredBatches, type StoredBatches } from '../feed/stored-batches.js';
import { createApp, type ApiDependencies } from '../http/app.js';
import { createOrgRateLimiter } from '../http/org-rate-limiter.js';
import { createEventIngestor, type EventIngestor } from '../ingest/event-ingestor.js';
import { createKafkaReadiness } from '../kafka/kafka-readiness.js';
import type { Logger } from '../observability/logger.js';
import { createGatewayMetrics, type GatewayMetrics } from '../metrics/gateway-metrics.js';
import { NotReady, type ReadinessProbe } from '../observability/readiness.js';
import { createSchemaRegistry, type SchemaRegistry } from '../schemas/schema-registry.js';
import { createClickHouseCommandLog } from '../store/clickhouse-command-log.js';
import { createClickHouseEventStore } from '../store/clickhouse-event-store.js';
import { pageBatchingOf } from '../store/batched-page-reads.js';
import type { EventStore, FeedSlice, StoredEvent } from '../store/event-store.js';
import { rowRefusal } from '../store/store-refusal.js';
import { createRetention, type Retention } from '../store/retention.js';
import { createErasureStore, type ErasureStore } from '../store/clickhouse-erasure.js';
import { runErasure, type EraseOptions, type EraseOutcome, type EraseRequest } from '../store/erasure-run.js';
import { createErasureSuppressions, type ErasureSuppressions } from '../store/erasure-suppressions.js';
import { createVerifier } from './auth-runtime.js';
import { startHttpServer, type HttpServer } from './http-server.js';
import { kafkaCommandPublisher, openKafka, runsOnKafka, startIngestConsumer, type OpenedKafka } from './kafka-runtime.js';
import { loadOrCreateSecret } from './secrets.js';
import { createClientAddressOf } from '../http/client-address.js';
import { openIdempotencyStore, openStore, storeLayout } from './store-runtime.js';

export interface Runtime {
  /** Base URL of the HTTP server, e.g. http://127.0.0.1:8080 (health only for ROLE=consumer). */
  readonly url: string;
  /** Base URL of /healthz, /readyz and /metrics when OPS_PORT puts them on a port of their own. */
  readonly opsUrl: string | undefined;
  /** The ingest side: events given here are validated and stored as the consumer stores them. */
  readonly ingestor: EventIngestor;
  /** Drops events past EVENTS_RETENTION_DAYS, hourly and on demand (src/store/retention.ts). */
  readonly retention: Retention;
  /** Erasures of a tenant's data on this process's store, and the suppressions it follows (docs/decisions/erasure.md). */
  readonly erasure: RuntimeErasure;
  /** Stops taking requests and messages, finishes what is in flight, then closes Kafka and the store. */
  close(): Promise<void>;
}

export interface RuntimeErasure {
  /** What `npm run erase` does, on this process's store: for the embedded store, whose directory one process holds. */
  erase(request: EraseRequest, progress?: EraseOptions['progress']): Promise<EraseOutcome>;
  readonly store: ErasureStore;
  readonly suppressions: ErasureSuppressions;
}

const systemEnvironment: CommandEnvironment = { now: () => new Date(), newId: randomUUID };

function cursorKey(config: Config, logger: Logger): Buffer {
  if (config.cursorSecret !== undefined) return Buffer.from(config.cursorSecret);
  if (config.clickhouse === undefined) {
    return Buffer.from(loadOrCreateSecret(resolve(config.dataDir, 'cursor-secret')).secret);
  }
  logger.warn('neither CURSOR_SECRET nor CURSOR_SECRET_FILE is set: cursors are valid only on this process until it restarts');
  return randomBytes(32);
}

function apiDependencies(
  config: Config,
  logger: Logger,
  env: CommandEnvironment,
  parts: {
    idempotency: IdempotencyStore;
    store: EventStore;
    publisher: CommandPublisher;
    schemas: SchemaRegistry;
    metrics: GatewayMetrics;
    stored: StoredBatches;
    firstPages: FirstPageCache<FeedSlice, StoredEvent> | undefined;
    suppressions: ErasureSuppressions;
  },
): ApiDependencies {
  return {
    verifier: createVerifier(config, logger),
    schemas: parts.schemas,
    feed: createFeedService({
      store: parts.store,
      cursors: createCursorCodec(cursorKey(config, logger)),
      firstPages: parts.firstPages,
      cursorPageServed: (source) => parts.metrics.cursorPages.inc({ source }),
      ownWrites: parts.stored,
    }),
    liveTail: createLiveTail({
      store: parts.store,
      settings: config.liveTail,
      logger,
      metrics: parts.metrics,
      stored: parts.stored,
      hidden: (event) => parts.suppressions.covers(event, () => event.device_id),
    }),
    commands: perCommand<CommandHandler>((entry) =>
      createCommandHandler<CommandEntry>(entry, {
        publisher: parts.publisher,
        idempotency: parts.idempotency,
        topic: config.topics[entry.topic.configKey],
        env,
        // The publisher's bound, then five seconds to record the acknowledgement: a store
        // slow for a moment costs a racing request a longer wait, not a second copy.
        claimLeaseMs: config.commandTimeoutMs + 5000,
        onAckNotRecorded: (error) => logger.warn({ err: error }, 'an Idempotency-Key acknowledgement was not recorded; a retry may publish the command again'),
      }),
    ),
    rateLimiter: config.rateLimit === undefined ? undefined : createOrgRateLimiter(config.rateLimit),
    authFailures:
      config.authFailures === undefined
        ? undefined
        : {
            limiter: createOrgRateLimiter({ perSecond: config.authFailures.perMinute / 60, burst: config.authFailures.burst }),
            clientAddressOf: createClientAddressOf(config.trustedProxies),
          },
    documents: { openApi: openApiDocument(), asyncApi: asyncApiDocument() },
  };
}

/**
 * Composition root. ROLE=all runs gateway and ingestion together: on the in-process bus
 * without KAFKA_BROKERS, through Kafka with it. ROLE=gateway and ROLE=consumer run one
 * side each (config.ts requires Kafka and a ClickHouse server for them).
 */
export async function startRuntime(config: Config, logger: Logger, env: CommandEnvironment = systemEnvironment): Promise<Runtime> {
  const transport = await openStore(config);
  // Shutdown runs in three stages, each in reverse order of start. First everything that has
  // work in flight drains: requests, live tails, the publisher's last acknowledgements, the
  // consumer's last batch and commit. Then the server that answers the orchestrator's
  // probes closes: until then /healthz says the process is alive and /readyz that it is
  // shutting down, where a closed port would read as a dead process while it still
  // finishes its work (and /metrics can still be scraped for the drain). Last, the clients
  // that /readyz itself checks (the store, the Kafka admin), so no probe ever runs on a
  // closed one.
  const closers: (() => Promise<void>)[] = [];
  let probeServer: HttpServer | undefined;
  const probeClients: (() => Promise<void>)[] = [() => transport.close()];
  const close = async () => {
    for (const step of [...closers].reverse()) await step();
    await probeServer?.close(0);
    for (const step of [...probeClients].reverse()) await step();
  };
  try {
    const schemas = createSchemaRegistry();
    // This process's own inserts: the live tail reads right after they pass its horizon
    // (docs/decisions/live-tail-shared-read.md), and they drop the first pages kept of their projects.
    const stored = createStoredBatches();
    const store = stored.observe(createClickHouseEventStore(transport, { batching: pageBatchingOf(config) }));
    const metrics = createGatewayMetrics();
    const firstPages = firstPagesOf(config, stored, {
      served: (source) => metrics.firstPages.inc({ source }),
      refreshed: () => metrics.firstPagesRefreshed.inc(),
      merged: () => metrics.firstPagesMerged.inc(),
      evicted: () => metrics.firstPagesEvicted.inc(),
    });
    if (firstPages !== undefined) {
      // The pages read again after writes settle last of all the closers (they run in
      // reverse), once the requests, the consumer and the watch that start them have
      // stopped, and before the store's client closes (probeClients close after every closer).
      closers.push(() => firstPages.close());
      // Other processes' writes reach the kept pages only through the store: the watch stops
      // before the store's client closes.
      const watch = watchFirstPages({
        store,
        cache: firstPages,
        settings: config.liveTail,
        logger,
        watched: (seeing) => metrics.firstPagesWatched.set(seeing),
        lostTrack: () => metrics.firstPagesLostTrack.inc(),
        polled: (seconds) => metrics.firstPagesWatchPoll.observe(seconds),
        window: (reached) => metrics.firstPagesWatchWindows.inc({ reached }),
      });
      closers.push(() => watch.stop());
    }
    // Erasures are read before anything ingests or streams, and every ERASURE_POLL_MS after:
    // a new one or a finished one drops the kept first pages, which may hold its events.
    const erasureStore = await createErasureStore({ transport, layout: storeLayout(config), clickhouse: config.clickhouse });
    probeClients.push(() => erasureStore.close());
    const suppressions = await createErasureSuppressions({
      store: erasureStore,
      settings: config.erasure,
      logger,
      changed: () => firstPages?.invalidateAll(),
      activeNow: (count) => metrics.erasuresActive.set(count),
    });
    closers.push(() => suppressions.stop());
    const erasure: RuntimeErasure = {
      erase: (request, progress) => runErasure(request, { store: erasureStore, settings: config.erasure, progress, inFlightMs: config.clickhouse?.requestTimeoutMs }),
      store: erasureStore,
      suppressions,
    };
    const ingestor = createEventIngestor({
      store,
      schemas,
      suppression: { covers: (head, deviceOf) => suppressions.covers(head, deviceOf), dropped: (count) => metrics.erasureSuppressed.inc(count) },
    });
    // Every process runs it: a drop is a no-op for a month already gone, so processes racing cost nothing.
    const retention = await createRetention({ transport, layout: storeLayout(config), settings: config.retention, clickhouse: config.clickhouse, registry: metrics.registry, logger });
    closers.push(() => retention.close());
    let closing = false;
    const readiness: ReadinessProbe[] = [{ name: 'store', check: () => transport.ping() }];
    let kafka: OpenedKafka | undefined;
    if (runsOnKafka(config)) {
      kafka = await openKafka(config, logger);
      const kafkaReadiness = createKafkaReadiness(config.kafka, logger);
      readiness.push(kafkaReadiness);
      probeClients.push(() => kafkaReadiness.close());
      if (config.role !== 'gateway') {
        const consumer = await startIngestConsumer(kafka, config, ingestor, metrics, logger);
        closers.push(() => consumer.stop());
        readiness.push(consumer.readiness);
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
        kafka !== undefined && runsOnKafka(config)
          ? kafkaCommandPublisher(kafka, config, metrics, logger)
          : createInProcessCommandPublisher({
              log: createClickHouseCommandLog(transport),
              ingestor,
              logger,
              isRowRefusal: (error) => rowRefusal(error) !== undefined,
            });
      closers.push(() => publisher.close());
      const idempotency = await openIdempotencyStore(transport, config);
      logger.info({ compareAndSet: idempotency.compareAndSet }, idempotency.compareAndSet ? 'Idempotency-Key records in KeeperMap' : 'Idempotency-Key records in the idempotency_keys table');
      api = apiDependencies(config, logger, env, { idempotency, store, publisher, schemas, metrics, stored, firstPages, suppressions });
    }
    const separateOps = config.opsPort !== undefined;
    let ops: HttpServer | undefined;
    if (config.opsPort !== undefined) {
      // The app with no API is the operations surface alone.
      ops = await startHttpServer(createApp({ logger, api: undefined, readiness, metrics, withOpsRoutes: true }), config.opsPort, config.host, config.http);
      probeServer = ops;
    }
    const http = await startHttpServer(createApp({ logger, api, readiness, metrics, withOpsRoutes: !separateOps }), config.port, config.host, config.http);
    if (api === undefined && !separateOps) {
      // ROLE=consumer without OPS_PORT: this server answers the probes and nothing else.
      probeServer = http;
    } else {
      // Requests in flight finish before the publisher behind them is flushed and closed. With
      // the probes on this port too, they are answered only while it drains: OPS_PORT keeps
      // them answered to the end.
      closers.push(() => http.close(config.shutdownGraceMs));
    }
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
    return { url, opsUrl, ingestor, retention, erasure, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
