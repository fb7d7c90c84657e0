import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Everything the process reports on /metrics, in one registry of its own (no global state). */
export interface GatewayMetrics {
  readonly registry: Registry;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly produceDuration: Histogram<'topic'>;
  readonly produceErrors: Counter<'topic'>;
  readonly consumerLag: Gauge<'topic' | 'partition'>;
  /** Seconds from the Kafka timestamp of a partition's oldest message not yet in the store to now; 0 when caught up (src/ingest/freshness.ts). */
  readonly consumerLagSeconds: Gauge<'topic' | 'partition'>;
  /** The Kafka timestamp (s) of that message, now when caught up: `time() -` it keeps growing when the consumer stops updating it. */
  readonly oldestUnreadTimestamp: Gauge<'topic' | 'partition'>;
  /** Seconds from an event's Kafka timestamp to the store's acknowledgement of the insert that holds it. */
  readonly visibleAgeFromKafka: Histogram;
  /** Seconds from an event's occurred_at to the same acknowledgement: includes the time before it reached Kafka. */
  readonly visibleAgeFromOccurredAt: Histogram;
  /** 1 while a partition's fetched events have waited longer than INGEST_STALL_MS for a commit, else 0; only for partitions this member holds. */
  readonly partitionStalled: Gauge<'topic' | 'partition'>;
  readonly ingestBatchSize: Histogram;
  readonly insertDuration: Histogram;
  readonly deadLettered: Counter<'reason'>;
  /** Offsets the ingest consumer skipped because they were deleted (retention, deleteRecords) before it read them, by topic and partition. */
  readonly retentionSkipped: Counter<'topic' | 'partition'>;
  /** Requests refused with 429 by the per-organization rate limit, by route template (never by organization: one series each would be unbounded). */
  readonly rateLimited: Counter<'route'>;
  /** The live tail's reads of the store: `shared` (one per poll interval for every live stream), `join` (one for the streams joining it) or `own` (a stream catching up). */
  readonly tailStoreReads: Counter<'kind'>;
  /** Live tails the gateway closed because their client did not read (STREAM_MAX_BUFFER_BYTES). */
  readonly tailSlowClosed: Counter;
  /** Open live tails: `live` (fed by the shared read) or `catching_up`. */
  readonly tailStreams: Gauge<'state'>;
  /** Feed first pages served, by `source`: `memory` (kept, src/feed/first-page-cache/first-page-cache.ts) or `store`. */
  readonly firstPages: Counter<'source'>;
  /** Feed pages by cursor where first pages are kept, by `source`: `memory` (cut from the kept first page, src/feed/first-page-cache/page-after-kept.ts) or `store`. */
  readonly cursorPages: Counter<'source'>;
  /** 1 while the watch of the store's writes follows them (kept first pages are served), 0 while it is blind. */
  readonly firstPagesWatched: Gauge;
  /** Times the watch fell behind the store's writes while following them, each time serving no kept first page until it caught up. */
  readonly firstPagesLostTrack: Counter;
  /** Kept first pages read again ahead of the dashboards that poll them: their project was written and the write dropped them, or they near their age. */
  readonly firstPagesWatchPoll: Histogram;
  readonly firstPagesWatchWindows: Counter<'reached'>;
  readonly firstPagesEvicted: Counter;
  readonly firstPagesRefreshed: Counter;
  /** Kept first pages a window of the watch changed in memory, with no store read. */
  readonly firstPagesMerged: Counter;
  /** Events ingest dropped because an erasure of their scope was living (docs/decisions/erasure.md); never dead-lettered. */
  readonly erasureSuppressed: Counter;
  /** Erasures whose suppression lives, as this process last read them (ERASURE_POLL_MS). */
  readonly erasuresActive: Gauge;
}

// From a loopback answer to a slow dependency: the API answers in milliseconds, a timeout in seconds.
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * How old an event is when it becomes visible: a healthy feed in tens of milliseconds to a
 * few seconds, a backlog in minutes to hours. Past four hours the bucket says "a backlog",
 * which is all an alert or a person needs of it.
 */
const FRESHNESS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400];
// From occurred_at a device that was offline sends events days old: their own buckets, so they do not hide in +Inf.
const OCCURRED_AT_BUCKETS = [...FRESHNESS_BUCKETS, 86400, 604800];

export function createGatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    produceDuration: new Histogram({
      name: 'kafka_produce_duration_seconds',
      help: 'Time until Kafka acknowledged a send of commands, by topic.',
      labelNames: ['topic'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    produceErrors: new Counter({ name: 'kafka_produce_errors_total', help: 'Sends of commands Kafka did not acknowledge, by topic.', labelNames: ['topic'], registers }),
    consumerLag: new Gauge({
      name: 'kafka_consumer_lag',
      help: 'Messages between the last one the ingest consumer took and the partition end, by topic and partition.',
      labelNames: ['topic', 'partition'],
      registers,
    }),
    consumerLagSeconds: new Gauge({
      name: 'kafka_consumer_lag_seconds',
      help: "Seconds from the Kafka timestamp of the partition's oldest message not yet in the store to now, by topic and partition; 0 when the last fetch reached the partition end and nothing fetched waits. Set about every second while the consumer runs; it stops with it: alert on time() - ingest_oldest_unread_timestamp_seconds instead.",
      labelNames: ['topic', 'partition'],
      registers,
    }),
    oldestUnreadTimestamp: new Gauge({
      name: 'ingest_oldest_unread_timestamp_seconds',
      help: "Kafka timestamp (Unix seconds) of the partition's oldest message not yet in the store, or the time of the last update when caught up, by topic and partition. It stays put while a partition is stuck, so time() minus it keeps growing even if the consumer stops updating it.",
      labelNames: ['topic', 'partition'],
      registers,
    }),
    visibleAgeFromKafka: new Histogram({
      name: 'ingest_visible_age_from_kafka_timestamp_seconds',
      help: "Seconds from an event's Kafka timestamp to the store's acknowledgement of the insert that holds it (the event is then readable).",
      buckets: FRESHNESS_BUCKETS,
      registers,
    }),
    visibleAgeFromOccurredAt: new Histogram({
      name: 'ingest_visible_age_from_occurred_at_seconds',
      help: "Seconds from an event's occurred_at to the store's acknowledgement of the insert that holds it: includes the time before the event reached Kafka (a device offline for days included).",
      buckets: OCCURRED_AT_BUCKETS,
      registers,
    }),
    partitionStalled: new Gauge({
      name: 'ingest_partition_stalled',
      help: 'Whether a partition held by the ingest consumer has fetched events that waited longer than INGEST_STALL_MS for their commit (1) or not (0), by topic and partition.',
      labelNames: ['topic', 'partition'],
      registers,
    }),
    ingestBatchSize: new Histogram({
      name: 'ingest_batch_size',
      help: 'Messages per ingest store write.',
      buckets: [1, 10, 100, 500, 1000, 2500, 5000, 10000, 50000],
      registers,
    }),
    insertDuration: new Histogram({ name: 'ingest_insert_duration_seconds', help: 'Time of one ingest store write.', buckets: LATENCY_BUCKETS, registers }),
    deadLettered: new Counter({ name: 'ingest_dead_lettered_total', help: 'Messages sent to the dead-letter topic, by reason.', labelNames: ['reason'], registers }),
    retentionSkipped: new Counter({
      name: 'ingest_retention_skipped_total',
      help: 'Offsets the ingest consumer found deleted (by retention or deleteRecords) before it read them, so their messages reached neither the feed nor the dead-letter topic, by topic and partition. Each gap is also logged at error level with its exact range.',
      labelNames: ['topic', 'partition'],
      registers,
    }),
    rateLimited: new Counter({ name: 'http_rate_limited_total', help: 'Requests refused by the per-organization rate limit, by route template.', labelNames: ['route'], registers }),
    tailStoreReads: new Counter({
      name: 'live_tail_store_reads_total',
      help: 'Window reads of the live tail: shared (one per poll interval for every live stream), join (one for the streams joining it) or own (a stream catching up after Last-Event-ID).',
      labelNames: ['kind'],
      registers,
    }),
    tailSlowClosed: new Counter({ name: 'live_tail_slow_closed_total', help: 'Live tails closed because their client read more slowly than events came.', registers }),
    tailStreams: new Gauge({ name: 'live_tail_streams', help: 'Open live tails: live (fed by the shared read) or catching_up.', labelNames: ['state'], registers }),
    firstPages: new Counter({
      name: 'feed_first_pages_total',
      help: 'Feed first-page reads (no cursor), by where they were answered: memory (a kept page) or store (a read of its own, or one refreshing a written page that it waited for). A request that joins a read already in flight is not counted again.',
      labelNames: ['source'],
      registers,
    }),
    cursorPages: new Counter({
      name: 'feed_cursor_pages_total',
      help: 'Feed pages by cursor where first pages are kept, by where they were answered: memory (cut from the kept first page of the same query) or store.',
      labelNames: ['source'],
      registers,
    }),
    firstPagesWatched: new Gauge({ name: 'feed_first_pages_watched', help: "1 while the watch of the store's writes follows them, so kept first pages are served; 0 while it is blind.", registers }),
    firstPagesLostTrack: new Counter({
      name: 'feed_first_pages_lost_track_total',
      help: "Times the watch of the store's writes fell behind them (a poll failed or ran longer than STREAM_POLL_MS), each time serving no kept first page until a poll ended well and on time.",
      registers,
    }),
    firstPagesWatchPoll: new Histogram({
      name: 'feed_first_pages_watch_poll_seconds',
      help: "Time each poll of the watch of the store's writes took, failed ones included: one longer than STREAM_POLL_MS leaves kept first pages unserved until a poll ends on time.",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    firstPagesWatchWindows: new Counter({
      name: 'feed_first_pages_watch_windows_total',
      help: "Windows of the store's writes the watch of kept first pages handed on, by how: rows (their rows read, pages brought up to date in memory), named (too many rows: their projects named, pages dropped) or all (every kept page dropped).",
      labelNames: ['reached'],
      registers,
    }),
    firstPagesRefreshed: new Counter({
      name: 'feed_first_pages_refreshed_total',
      help: 'Kept first pages read again from the store, because they had been served since they were kept: as soon as their project was written where the write dropped them, or in the last quarter of their age.',
      registers,
    }),
    firstPagesEvicted: new Counter({
      name: 'feed_first_pages_evicted_total',
      help: 'Kept first pages dropped to make room for others (at most 10,000 pages and 302,000 events together): pages polled past that bound push one another out and are read again from the store.',
      registers,
    }),
    firstPagesMerged: new Counter({
      name: 'feed_first_pages_merged_total',
      help: "Kept first pages changed in memory by the events the watch of the store's writes read for their project, instead of being dropped and read again.",
      registers,
    }),
    erasureSuppressed: new Counter({
      name: 'erasure_suppressed_events_total',
      help: 'Events ingest dropped, not stored and not dead-lettered, because an erasure of their organization, project or device was living (ERASURE_SUPPRESS_DAYS).',
      registers,
    }),
    erasuresActive: new Gauge({
      name: 'erasures_active',
      help: 'Erasures whose suppression lives, as this process last read the erasures table (every ERASURE_POLL_MS).',
      registers,
    }),
  };
}
