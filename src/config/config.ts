/**
 * Configuration is read from the environment once, at start, into a frozen object.
 * A bad value throws ConfigError naming the variable; main() prints that one line and exits.
 * Variable names are part of the product's contract (docs/configuration.md).
 *
 * Each module declares and parses its own settings (src/kafka/kafka-settings.ts,
 * src/store/clickhouse-settings.ts, src/auth/auth-settings.ts, ...); this file only reads
 * the process's own (role, ports, host, data directory, log level, shutdown) and assembles
 * the rest, in a fixed order, into one Config. It sits above the modules it assembles and
 * nothing below src/runtime/ imports it (docs/decisions/layers.md).
 */
import { parseAuth, parseIssuer, parseTokenRules, type AuthConfig, type TokenRulesConfig } from '../auth/auth-settings.js';
import { commandTopics } from '../commands/catalogue.js';
import { parseCommandTimeout, parseCommandTopics, type CommandTopicsConfig } from '../commands/command-settings.js';
import { parseLiveTail, type LiveTailConfig } from '../feed/tail/live-tail-settings.js';
import {
  parseAuthFailures,
  parseHttpServer,
  parseRateLimit,
  parseTrustedProxies,
  type AuthFailureLimitConfig,
  type HttpServerConfig,
  type RateLimitConfig,
} from '../http/http-settings.js';
import { parseDeadLetterTopic, parseEventTopics, parseIngest, type IngestConfig } from '../ingest/ingest-settings.js';
import { parseKafkaSecurity } from '../kafka/kafka-security-config.js';
import { parseBrokers, parseKafka, type KafkaConfig } from '../kafka/kafka-settings.js';
import { ConfigError } from '../settings/config-error.js';
import { integer, optional, optionalInteger, setAmong, type Env } from '../settings/env.js';
import { secretVariable } from '../settings/file-variables.js';
import { PAGE_BATCHING } from '../store/batched-page-reads.js';
import { parseClickHouse, type ClickHouseConfig } from '../store/clickhouse-settings.js';
import { parseRetention, type RetentionConfig } from '../store/retention-settings.js';
import { parseErasure, type ErasureConfig } from '../store/erasure-settings.js';

export { ConfigError };
export type { AuthConfig, AuthFailureLimitConfig, ClickHouseConfig, HttpServerConfig, IngestConfig, KafkaConfig, LiveTailConfig, RateLimitConfig, RetentionConfig, TokenRulesConfig };

export type Role = 'gateway' | 'consumer' | 'all';

/** The topics of the contract: each command's (named by the catalogue's entries), the events' and the dead letters'. */
export interface TopicsConfig extends CommandTopicsConfig {
  /** Topics of canonical events the ingest consumer reads (EVENTS_TOPICS); it reads the command topics too. */
  readonly events: readonly string[];
  readonly deadLetter: string;
}

export interface Config {
  readonly role: Role;
  readonly port: number;
  /** Port of /healthz, /readyz and /metrics when they are kept off the API's port (OPS_PORT). */
  readonly opsPort: number | undefined;
  readonly host: string;
  readonly dataDir: string;
  readonly logLevel: string;
  readonly kafka: KafkaConfig | undefined;
  readonly clickhouse: ClickHouseConfig | undefined;
  /** How long events are kept, on either store (EVENTS_RETENTION_DAYS; docs/decisions/retention.md). */
  readonly retention: RetentionConfig;
  /** Erasures' suppression: how often each process reads them, how long they live (ERASURE_*; docs/decisions/erasure.md). */
  readonly erasure: ErasureConfig;
  readonly topics: TopicsConfig;
  readonly auth: AuthConfig;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
  /** Leeway for exp, nbf and iat, for clocks that disagree with the token issuer's. */
  readonly clockToleranceSeconds: number;
  /** The token rules of RFC 8725 that are the deployment's to choose (docs/decisions/token-rules.md). */
  readonly tokens: TokenRulesConfig;
  /** NODE_ENV says production: no start on the embedded default's development secret. */
  readonly production: boolean;
  /** Failed authentications per client address, limited before any key operation (AUTH_FAILURES_*); undefined: no limit. */
  readonly authFailures: AuthFailureLimitConfig | undefined;
  /** Peers whose X-Forwarded-For names the client (TRUSTED_PROXIES); empty: the connection's peer is the client. */
  readonly trustedProxies: readonly string[];
  /** Key for cursor MACs; undefined means "generate one" (see src/runtime/secrets.ts). */
  readonly cursorSecret: string | undefined;
  /** Upper bound on the wait for Kafka to acknowledge a command before answering 503. */
  readonly commandTimeoutMs: number;
  readonly http: HttpServerConfig;
  /** Undefined when RATE_LIMIT_PER_ORG is unset or 0: no limit. */
  readonly rateLimit: RateLimitConfig | undefined;
  /** On SIGTERM, how long requests in flight and open connections get before they are cut (SHUTDOWN_GRACE_MS). */
  readonly shutdownGraceMs: number;
  readonly ingest: IngestConfig;
  /** The live tail, GET .../events/stream (docs/decisions/live-tail.md). */
  readonly liveTail: LiveTailConfig;
  /** How long after its store read began a feed first page may be served again from memory, while no write of its project is seen; 0: never (FEED_FIRST_PAGE_MAX_AGE_MS). */
  readonly feedFirstPageMaxAgeMs: number;
  /** Batches of concurrent feed page reads the store answers at once; 0: every read alone (FEED_BATCHES_IN_FLIGHT). */
  readonly feedBatchesInFlight: number;
}

function parseRole(env: Env): Role {
  const raw = optional(env, 'ROLE') ?? 'all';
  if (raw === 'gateway' || raw === 'consumer' || raw === 'all') return raw;
  throw new ConfigError('ROLE', `must be gateway, consumer or all, got "${raw}"`);
}

/** NODE_ENV=production, as Node tooling and the Dockerfile spell it, or prod, in any case. */
function isProduction(env: Env): boolean {
  const value = optional(env, 'NODE_ENV')?.toLowerCase();
  return value === 'production' || value === 'prod';
}

/**
 * Five minutes. A kept page is brought up to date with every write the watch or the
 * process's own inserts show, so the age bounds only what no write shows (a month that
 * retention drops, a row deleted by hand), and a polled page is read again every 3¾
 * minutes (REFRESH_AHEAD_SHARE of it) however often it is polled: the store's reads for
 * 1,000 polled pages are 4.4 a second (docs/decisions/dashboard-polling.md).
 */
const DEFAULT_FIRST_PAGE_MAX_AGE_MS = 300_000;

export function loadConfig(env: Env): Config {
  const role = parseRole(env);
  const brokers = parseBrokers(env);
  const clickhouse = parseClickHouse(env);
  const embedded = brokers === undefined && clickhouse === undefined;
  const production = isProduction(env);
  const kafkaSecurity = parseKafkaSecurity(env, brokers !== undefined);
  if (role !== 'all' && clickhouse === undefined) {
    // chDB's data directory belongs to one process, so split roles need a ClickHouse server.
    throw new ConfigError('ROLE', `"${role}" needs CLICKHOUSE_URL; the embedded store serves only ROLE=all`);
  }
  if (role !== 'all' && brokers === undefined) {
    throw new ConfigError('ROLE', `"${role}" needs KAFKA_BROKERS; the in-process bus serves only ROLE=all`);
  }
  const events = parseEventTopics(env);
  const config: Config = {
    role,
    port: integer(env, 'PORT', 8080, 0, 65535),
    opsPort: optionalInteger(env, 'OPS_PORT', 0, 65535),
    host: optional(env, 'HOST') ?? '0.0.0.0',
    dataDir: optional(env, 'DATA_DIR') ?? './data',
    logLevel: optional(env, 'LOG_LEVEL') ?? 'info',
    kafka: parseKafka(env, brokers, kafkaSecurity),
    clickhouse,
    retention: parseRetention(env),
    erasure: parseErasure(env),
    topics: {
      events,
      ...parseCommandTopics(env),
      deadLetter: parseDeadLetterTopic(env),
    },
    auth: parseAuth(env, embedded, production),
    issuer: parseIssuer(env),
    audience: optional(env, 'AUTH_AUDIENCE'),
    clockToleranceSeconds: integer(env, 'AUTH_CLOCK_TOLERANCE_S', 30, 0, 300),
    tokens: parseTokenRules(env),
    production,
    authFailures: parseAuthFailures(env),
    trustedProxies: parseTrustedProxies(env),
    cursorSecret: secretVariable(env, 'CURSOR_SECRET'),
    commandTimeoutMs: parseCommandTimeout(env),
    http: parseHttpServer(env),
    rateLimit: parseRateLimit(env),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    // On: polled first pages are served from memory, showing other processes' writes up to
    // STREAM_SETTLE_MS + 2 × STREAM_POLL_MS late (docs/decisions/dashboard-polling.md).
    feedFirstPageMaxAgeMs: integer(env, 'FEED_FIRST_PAGE_MAX_AGE_MS', DEFAULT_FIRST_PAGE_MAX_AGE_MS, 0, 3_600_000),
    feedBatchesInFlight: integer(env, 'FEED_BATCHES_IN_FLIGHT', PAGE_BATCHING.inFlight, 0, 64),
    ingest: parseIngest(env),
    liveTail: parseLiveTail(env),
  };
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(config.logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of fatal, error, warn, info, debug, trace, silent`);
  }
  for (const { topic: commands } of commandTopics(config.topics)) {
    // The consumer reads a command topic as commands; listing one as an event topic would dead-letter every command.
    if (events.includes(commands)) throw new ConfigError('EVENTS_TOPICS', `"${commands}" is a command topic; list only topics of canonical events`);
  }
  if (config.opsPort !== undefined && config.opsPort !== 0 && config.opsPort === config.port) {
    throw new ConfigError('OPS_PORT', `must differ from PORT (${config.port})`);
  }
  if (config.cursorSecret !== undefined && Buffer.byteLength(config.cursorSecret) < 32) {
    throw new ConfigError(setAmong(env, ['CURSOR_SECRET', 'CURSOR_SECRET_FILE'])[0]!, 'must be at least 32 bytes');
  }
  return Object.freeze(config);
}
