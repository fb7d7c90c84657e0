/**
 * Configuration is read from the environment once, at start, into a frozen object.
 * A bad value throws ConfigError naming the variable; main() prints that one line and exits.
 * Variable names are part of the product's contract (docs/configuration.md).
 */
import { isIP } from 'node:net';
import { commandTopics, perTopicKey, type CommandTopicKey } from '../commands/catalogue.js';
import { flag, optional, setAmong, type Env } from './config-env.js';
import { ConfigError } from './config-error.js';
import { certificatesFile, secretVariable } from './config-files.js';
import { parseKafkaSecurity, type KafkaSecurityConfig } from '../kafka/kafka-security-config.js';
import type { JwksSource } from '../auth/jwks-keys.js';
import { COMPRESSION_NAMES, type CompressionName } from '../kafka/compression-codecs.js';
import { PAGE_BATCHING } from '../store/batched-page-reads.js';

export { ConfigError };

export type Role = 'gateway' | 'consumer' | 'all';

export type AuthConfig =
  | { readonly kind: 'hs256'; readonly secret: string }
  | {
      readonly kind: 'jwks';
      /** AUTH_JWKS_URL, or AUTH_OIDC_ISSUER's issuer, whose discovery document names the key set. */
      readonly url: JwksSource;
      /** The longest a request waits on the endpoint; at most one fetch per cooldown; keys refreshed after max age. */
      readonly timeoutMs: number;
      readonly cooldownMs: number;
      readonly maxAgeMs: number;
    }
  | { readonly kind: 'public-key'; readonly pem: string }
  /** Embedded default only: a secret generated and kept under DATA_DIR. */
  | { readonly kind: 'development' };

export interface ClickHouseConfig {
  readonly url: string;
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** PEM CA bundle trusted for an https:// URL instead of Node's built-in roots (CLICKHOUSE_CA_FILE). */
  readonly ca: string | undefined;
  readonly database: string;
  /** Longest wait for one answer from the server; past it the request fails as unavailable (503). */
  readonly requestTimeoutMs: number;
  /** Tables on a cluster of shards behind Distributed tables (CLICKHOUSE_CLUSTER); undefined is one node. */
  readonly cluster:
    | {
        readonly name: string;
        readonly replicated: boolean;
        /**
         * HTTP URLs of every shard, the entry node among them (CLICKHOUSE_SHARD_URLS): an
         * unreplicated cluster's tables are created on each in turn, since ON CLUSTER needs
         * Keeper DDL. Undefined: the entry node only, allowed only on a one-shard cluster.
         */
        readonly shardUrls: readonly string[] | undefined;
      }
    | undefined;
  /**
   * Where Idempotency-Key records live (IDEMPOTENCY_STORE): `keeper-map`, a KeeperMap table
   * with a real compare-and-set (the server needs Keeper or ZooKeeper); `table`, a
   * MergeTree table; `auto` (default), keeper-map where the server can hold it.
   */
  readonly idempotencyStore: 'auto' | 'keeper-map' | 'table';
}

/** The topics of the contract: each command's (named by the catalogue's entries), the events' and the dead letters'. */
export interface TopicsConfig extends Readonly<Record<CommandTopicKey, string>> {
  /** Topics of canonical events the ingest consumer reads (EVENTS_TOPICS); it reads the command topics too. */
  readonly events: readonly string[];
  readonly deadLetter: string;
}

/** Bounds on how long one client may hold a connection of the HTTP server (docs/decisions/requests-and-errors.md). */
export interface HttpServerConfig {
  /** From the first byte of a request until its headers are complete (HTTP_HEADERS_TIMEOUT_MS). */
  readonly headersTimeoutMs: number;
  /** From the first byte of a request until it has arrived in full, body included (HTTP_REQUEST_TIMEOUT_MS). */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection waits for its next request (HTTP_KEEP_ALIVE_TIMEOUT_MS). */
  readonly keepAliveTimeoutMs: number;
}

/** A token bucket per organization: `perSecond` tokens a second, holding at most `burst` (RATE_LIMIT_PER_ORG, RATE_LIMIT_BURST). */
export interface RateLimitConfig {
  readonly perSecond: number;
  readonly burst: number;
}

export interface TokenRulesConfig {
  /** The longest `exp - iat` accepted (AUTH_MAX_TOKEN_LIFETIME_S). */
  readonly maxLifetimeSeconds: number;
  /** The `typ` header every token must carry (AUTH_TOKEN_TYPE), e.g. `at+jwt`; undefined checks none. */
  readonly type: string | undefined;
}

/** A token bucket of failures per client address: `burst` failures at once, then `perMinute` a minute. */
export interface AuthFailureLimitConfig {
  readonly perMinute: number;
  readonly burst: number;
}

/** With `ssl` and `sasl` (KAFKA_SSL..., KAFKA_SASL...: src/kafka/kafka-security-config.ts). */
export interface KafkaConfig extends KafkaSecurityConfig {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly consumerGroup: string;
  /** Partitions of topics the gateway creates when they are missing. */
  readonly partitions: number;
  /**
   * Replication factor and min.insync.replicas of topics the gateway creates
   * (KAFKA_REPLICATION_FACTOR, KAFKA_MIN_INSYNC_REPLICAS); undefined is decided at start
   * from the number of brokers (src/kafka/replication.ts).
   */
  readonly replicationFactor: number | undefined;
  readonly minInsyncReplicas: number | undefined;
  /** Idempotent producers per gateway process that send side by side (KAFKA_PRODUCERS). */
  readonly producers: number;
  /** How long the group waits for a silent ingest consumer before its partitions move to another (KAFKA_SESSION_TIMEOUT_MS). */
  readonly sessionTimeoutMs: number;
  /** Whether missing topics are created at start (KAFKA_CREATE_TOPICS); otherwise their absence stops the start. */
  readonly createTopics: boolean;
  /** The codec of the record batches the gateway writes: commands and dead letters (KAFKA_COMPRESSION). */
  readonly compression: CompressionName;
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
  readonly ingest: {
    readonly batchSize: number;
    readonly batchWaitMs: number;
    /** Most bytes of message values in one insert (INGEST_BATCH_BYTES): a backlog of large events is split by bytes as well as by count. */
    readonly batchBytes: number;
    /** Events fetched and not yet stored, at most (INGEST_MAX_IN_FLIGHT_EVENTS); fetching waits past it. */
    readonly maxInFlightEvents: number;
    /** Bytes of message values fetched and not yet stored, at most (INGEST_MAX_IN_FLIGHT_BYTES); fetching waits past it. */
    readonly maxInFlightBytes: number;
    /** A partition with fetched events whose commit has not moved for this long is stalled: /metrics and /readyz say so (INGEST_STALL_MS). */
    readonly stallMs: number;
    /** Most bytes of one partition's records in one fetch, as the broker keeps them: compressed (INGEST_FETCH_PARTITION_BYTES). */
    readonly fetchPartitionBytes: number;
    /** How old the consumer's view of its topics' partitions may grow before it is asked for again: partitions added to a topic are read within about this long (INGEST_METADATA_MAX_AGE_MS). */
    readonly metadataMaxAgeMs: number;
  };
  /** The live tail, GET .../events/stream (docs/decisions/live-tail.md). */
  readonly liveTail: LiveTailConfig;
  /** How long after its store read began a feed first page may be served again from memory, while no write of its project is seen; 0: never (FEED_FIRST_PAGE_MAX_AGE_MS). */
  readonly feedFirstPageMaxAgeMs: number;
  /** Batches of concurrent feed page reads the store answers at once; 0: every read alone (FEED_BATCHES_IN_FLIGHT). */
  readonly feedBatchesInFlight: number;
}

function parseIngest(env: Env): Config['ingest'] {
  const batchSize = integer(env, 'INGEST_BATCH_SIZE', 50_000, 1, 1_000_000);
  // 32 MiB holds a full batch of telemetry (50,000 events of about 450 bytes is 22 MB), so
  // the count decides for it; a backlog of 86 KB events went into one body of 4.3 GB, past
  // what a Buffer can hold. Up to 1 GiB: a Buffer's and the server's own limits lie above.
  const batchBytes = integer(env, 'INGEST_BATCH_BYTES', 32 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024);
  return {
    batchSize,
    batchBytes,
    batchWaitMs: integer(env, 'INGEST_BATCH_WAIT_MS', 200, 0, 60_000),
    // Four inserts' worth keeps the store busy while kafkajs fetches the next ones.
    maxInFlightEvents: integer(env, 'INGEST_MAX_IN_FLIGHT_EVENTS', 4 * batchSize, 1, 10_000_000),
    maxInFlightBytes: integer(env, 'INGEST_MAX_IN_FLIGHT_BYTES', 4 * batchBytes, 64 * 1024, 8 * 1024 * 1024 * 1024),
    // Six times the store retry's longest backoff (10 s): a sick store shows within a minute, a slow insert does not.
    stallMs: integer(env, 'INGEST_STALL_MS', 60_000, 1000, 86_400_000),
    // Counted compressed, as the broker stores it: why 1 MiB, in src/ingest/kafka-ingest-consumer.ts (fetchBytes).
    fetchPartitionBytes: integer(env, 'INGEST_FETCH_PARTITION_BYTES', 1024 * 1024, 64 * 1024, 16 * 1024 * 1024),
    // kafkajs's default (and the Java client's) is 300 s: partitions added during a spike went
    // unread for five minutes. One metadata request each 10 s costs the broker next to nothing
    // (docs/decisions/topic-changes-and-gaps.md).
    metadataMaxAgeMs: integer(env, 'INGEST_METADATA_MAX_AGE_MS', 10_000, 1000, 300_000),
  };
}

export interface LiveTailConfig {
  /** Rows ingested less than this long ago are not read yet: inserts become visible out of ingested_at order (STREAM_SETTLE_MS). */
  readonly settleMs: number;
  /** Interval between the starts of the live tail's shared reads (STREAM_POLL_MS). */
  readonly pollMs: number;
  /** A comment line after this long without any other line (STREAM_HEARTBEAT_MS). */
  readonly heartbeatMs: number;
  /** Open streams per organization on one gateway process (STREAM_MAX_PER_ORG). */
  readonly maxPerOrg: number;
  /** Open streams per caller, the token's subject, on one gateway process (STREAM_MAX_PER_CALLER). */
  readonly maxPerCaller: number;
  /** Open streams on one gateway process in all (STREAM_MAX_PER_PROCESS). */
  readonly maxPerProcess: number;
  /** Bytes a stream may queue for a client that does not read them before it is closed (STREAM_MAX_BUFFER_BYTES). */
  readonly maxBufferBytes: number;
}


const MIN_HS256_SECRET_BYTES = 32;

/** A whole number in [min, max], or undefined when the variable is unset. */
function optionalInteger(env: Env, name: string, min: number, max: number): number | undefined {
  const raw = optional(env, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new ConfigError(name, `must be one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  return optionalInteger(env, name, min, max) ?? fallback;
}

function list(env: Env, name: string): string[] | undefined {
  const raw = optional(env, name);
  if (raw === undefined) return undefined;
  const items = raw.split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) throw new ConfigError(name, `has an empty entry in "${raw}"`);
  return items;
}

const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

function topic(env: Env, name: string, fallback: string): string {
  const value = optional(env, name) ?? fallback;
  if (!TOPIC_NAME.test(value)) throw new ConfigError(name, `"${value}" is not a valid Kafka topic name`);
  return value;
}

function parseRole(env: Env): Role {
  const raw = optional(env, 'ROLE') ?? 'all';
  if (raw === 'gateway' || raw === 'consumer' || raw === 'all') return raw;
  throw new ConfigError('ROLE', `must be gateway, consumer or all, got "${raw}"`);
}

function parseBrokers(env: Env): string[] | undefined {
  const brokers = list(env, 'KAFKA_BROKERS');
  for (const broker of brokers ?? []) {
    if (!/^[^:\s]+:\d{1,5}$/.test(broker)) throw new ConfigError('KAFKA_BROKERS', `"${broker}" is not host:port`);
  }
  return brokers;
}

function parseReplication(env: Env): Pick<KafkaConfig, 'replicationFactor' | 'minInsyncReplicas'> {
  const replicationFactor = optionalInteger(env, 'KAFKA_REPLICATION_FACTOR', 1, 16);
  const minInsyncReplicas = optionalInteger(env, 'KAFKA_MIN_INSYNC_REPLICAS', 1, 16);
  // More required acknowledgements than copies would refuse every write.
  if (replicationFactor !== undefined && minInsyncReplicas !== undefined && minInsyncReplicas > replicationFactor) {
    throw new ConfigError('KAFKA_MIN_INSYNC_REPLICAS', `must not exceed KAFKA_REPLICATION_FACTOR (${replicationFactor}), got ${minInsyncReplicas}`);
  }
  return { replicationFactor, minInsyncReplicas };
}

function parseClickHouse(env: Env): ClickHouseConfig | undefined {
  const raw = optional(env, 'CLICKHOUSE_URL');
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('CLICKHOUSE_URL', 'is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError('CLICKHOUSE_URL', 'must be an http:// or https:// URL');
  }
  // Credentials and database may sit in the URL or beside it; the variables win.
  const username = optional(env, 'CLICKHOUSE_USER') ?? (url.username ? decodeURIComponent(url.username) : undefined);
  const password = secretVariable(env, 'CLICKHOUSE_PASSWORD') ?? (url.password ? decodeURIComponent(url.password) : undefined);
  const pathDatabase = url.pathname.replace(/^\/+|\/+$/g, '');
  const database = optional(env, 'CLICKHOUSE_DATABASE') ?? (pathDatabase || 'default');
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(database)) {
    throw new ConfigError('CLICKHOUSE_DATABASE', `"${database}" is not a plain database name`);
  }
  url.username = '';
  url.password = '';
  url.pathname = '/';
  const requestTimeoutMs = integer(env, 'CLICKHOUSE_REQUEST_TIMEOUT_MS', 10_000, 100, 600_000);
  if (url.protocol !== 'https:' && optional(env, 'CLICKHOUSE_CA_FILE') !== undefined) {
    throw new ConfigError('CLICKHOUSE_CA_FILE', 'applies only to an https:// CLICKHOUSE_URL');
  }
  const ca = certificatesFile(env, 'CLICKHOUSE_CA_FILE')?.pem;
  const idempotencyStore = optional(env, 'IDEMPOTENCY_STORE') ?? 'auto';
  if (idempotencyStore !== 'auto' && idempotencyStore !== 'keeper-map' && idempotencyStore !== 'table') {
    throw new ConfigError('IDEMPOTENCY_STORE', `must be auto, keeper-map or table, got "${idempotencyStore}"`);
  }
  return {
    url: url.toString().replace(/\/$/, ''),
    username,
    password,
    ca,
    database,
    requestTimeoutMs,
    cluster: parseCluster(env),
    idempotencyStore,
  };
}

function parseHttpServer(env: Env): HttpServerConfig {
  const headersTimeoutMs = integer(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const requestTimeoutMs = integer(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  // Node refuses a headers timeout longer than the request timeout, and it would mean nothing.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS', `must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${headersTimeoutMs}`);
  }
  return { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5000, 100, 600_000) };
}

function parseRateLimit(env: Env): RateLimitConfig | undefined {
  const perSecond = integer(env, 'RATE_LIMIT_PER_ORG', 0, 0, 1_000_000);
  if (perSecond === 0) {
    if (optional(env, 'RATE_LIMIT_BURST') !== undefined) throw new ConfigError('RATE_LIMIT_BURST', 'applies only with RATE_LIMIT_PER_ORG');
    return undefined;
  }
  return { perSecond, burst: integer(env, 'RATE_LIMIT_BURST', perSecond, 1, 1_000_000) };
}

function parseAuthFailures(env: Env): AuthFailureLimitConfig | undefined {
  // 60 a minute after a burst of 30: a person mistyping or a client with a stale token never
  // meets it, and a flood of forged tokens from one address costs one verification a second.
  const perMinute = integer(env, 'AUTH_FAILURES_PER_MINUTE', 60, 0, 1_000_000);
  if (perMinute === 0) {
    if (optional(env, 'AUTH_FAILURES_BURST') !== undefined) throw new ConfigError('AUTH_FAILURES_BURST', 'applies only with AUTH_FAILURES_PER_MINUTE above 0');
    return undefined;
  }
  return { perMinute, burst: integer(env, 'AUTH_FAILURES_BURST', 30, 1, 1_000_000) };
}

/** TRUSTED_PROXIES: addresses or CIDR blocks (IPv4 or IPv6) of the proxies whose X-Forwarded-For is believed. */
function parseTrustedProxies(env: Env): string[] {
  const entries = list(env, 'TRUSTED_PROXIES') ?? [];
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const bits = family === 6 ? 128 : 32;
    if (family === 0 || extra !== undefined || (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits))) {
      throw new ConfigError('TRUSTED_PROXIES', `"${entry}" is not an IP address or CIDR block`);
    }
  }
  return entries;
}

/** NODE_ENV=production, as Node tooling and the Dockerfile spell it, or prod, in any case. */
function isProduction(env: Env): boolean {
  const value = optional(env, 'NODE_ENV')?.toLowerCase();
  return value === 'production' || value === 'prod';
}

function parseCluster(env: Env): ClickHouseConfig['cluster'] {
  const name = optional(env, 'CLICKHOUSE_CLUSTER');
  const replicated = optional(env, 'CLICKHOUSE_CLUSTER_REPLICATED');
  const shardUrls = list(env, 'CLICKHOUSE_SHARD_URLS');
  if (name === undefined) {
    if (replicated !== undefined) throw new ConfigError('CLICKHOUSE_CLUSTER_REPLICATED', 'applies only with CLICKHOUSE_CLUSTER');
    if (shardUrls !== undefined) throw new ConfigError('CLICKHOUSE_SHARD_URLS', 'applies only with CLICKHOUSE_CLUSTER');
    return undefined;
  }
  for (const shardUrl of shardUrls ?? []) {
    let parsed: URL;
    try {
      parsed = new URL(shardUrl);
    } catch {
      throw new ConfigError('CLICKHOUSE_SHARD_URLS', `"${shardUrl}" is not a URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError('CLICKHOUSE_SHARD_URLS', `"${shardUrl}" is not an http:// or https:// URL`);
    }
  }
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name)) throw new ConfigError('CLICKHOUSE_CLUSTER', `"${name}" is not a plain cluster name`);
  if (replicated !== undefined && replicated !== 'true' && replicated !== 'false') {
    throw new ConfigError('CLICKHOUSE_CLUSTER_REPLICATED', `must be true or false, got "${replicated}"`);
  }
  if (replicated !== 'false' && shardUrls !== undefined) {
    throw new ConfigError('CLICKHOUSE_SHARD_URLS', 'applies only with CLICKHOUSE_CLUSTER_REPLICATED=false (a replicated cluster creates its tables ON CLUSTER)');
  }
  return { name, replicated: replicated !== 'false', shardUrls: shardUrls?.map((u) => u.replace(/\/$/, '')) };
}

const JWKS_SETTINGS = ['AUTH_JWKS_TIMEOUT_MS', 'AUTH_JWKS_COOLDOWN_MS', 'AUTH_JWKS_MAX_AGE_MS'] as const;

/** AUTH_OIDC_ISSUER: an http(s) URL with no query or fragment (OpenID Connect Discovery 1.0, section 2). */
function parseOidcIssuer(env: Env): string | undefined {
  const raw = optional(env, 'AUTH_OIDC_ISSUER');
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('AUTH_OIDC_ISSUER', 'is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError('AUTH_OIDC_ISSUER', 'must be http(s)');
  if (url.search !== '' || url.hash !== '' || raw.includes('?') || raw.includes('#')) throw new ConfigError('AUTH_OIDC_ISSUER', 'must have no query or fragment');
  // Kept as written: tokens must carry exactly this `iss`, and the discovery document must name it.
  return raw;
}

/** The required `iss`: AUTH_ISSUER, else the AUTH_OIDC_ISSUER whose keys verify the tokens. */
function parseIssuer(env: Env): string | undefined {
  const issuer = optional(env, 'AUTH_ISSUER');
  const oidcIssuer = optional(env, 'AUTH_OIDC_ISSUER');
  if (issuer !== undefined && oidcIssuer !== undefined && issuer !== oidcIssuer) {
    throw new ConfigError('AUTH_ISSUER', `must equal AUTH_OIDC_ISSUER ("${oidcIssuer}") when both are set, got "${issuer}"`);
  }
  return issuer ?? oidcIssuer;
}

/** AUTH_TOKEN_TYPE: a media type's subtype as JWTs carry it in `typ` (RFC 8725, 3.11), e.g. at+jwt. */
function parseTokenType(env: Env): string | undefined {
  const raw = optional(env, 'AUTH_TOKEN_TYPE');
  if (raw === undefined) return undefined;
  if (!/^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126})?$/.test(raw)) {
    throw new ConfigError('AUTH_TOKEN_TYPE', `"${raw}" is not a media type such as at+jwt`);
  }
  return raw;
}

const AUTH_VARIABLES = 'AUTH_JWT_SECRET (or AUTH_JWT_SECRET_FILE), AUTH_JWKS_URL, AUTH_OIDC_ISSUER or AUTH_PUBLIC_KEY';

function parseAuth(env: Env, embedded: boolean): AuthConfig {
  const ways = setAmong(env, ['AUTH_JWT_SECRET', 'AUTH_JWT_SECRET_FILE', 'AUTH_JWKS_URL', 'AUTH_PUBLIC_KEY', 'AUTH_OIDC_ISSUER']);
  if (ways.length > 1) throw new ConfigError(ways.join(', '), 'set only one way to verify tokens');
  const jwksUrl = optional(env, 'AUTH_JWKS_URL');
  const publicKey = optional(env, 'AUTH_PUBLIC_KEY');
  const oidcIssuer = parseOidcIssuer(env);
  // A timing set for a key endpoint that is not configured is a mistake worth hearing about at start.
  const strayJwksSetting = JWKS_SETTINGS.find((name) => optional(env, name) !== undefined);
  if (jwksUrl === undefined && oidcIssuer === undefined && strayJwksSetting !== undefined) {
    throw new ConfigError(strayJwksSetting, 'applies only with AUTH_JWKS_URL or AUTH_OIDC_ISSUER');
  }
  const jwksTiming = () => ({
    timeoutMs: integer(env, 'AUTH_JWKS_TIMEOUT_MS', 2000, 100, 60_000),
    cooldownMs: integer(env, 'AUTH_JWKS_COOLDOWN_MS', 30_000, 0, 3_600_000),
    maxAgeMs: integer(env, 'AUTH_JWKS_MAX_AGE_MS', 600_000, 1000, 86_400_000),
  });
  if (oidcIssuer !== undefined) return { kind: 'jwks', url: { issuer: oidcIssuer }, ...jwksTiming() };
  const secret = secretVariable(env, 'AUTH_JWT_SECRET');
  if (secret !== undefined) {
    if (Buffer.byteLength(secret) < MIN_HS256_SECRET_BYTES) {
      throw new ConfigError(ways[0]!, `must be at least ${MIN_HS256_SECRET_BYTES} bytes for HS256`);
    }
    return { kind: 'hs256', secret };
  }
  if (jwksUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(jwksUrl);
    } catch {
      throw new ConfigError('AUTH_JWKS_URL', 'is not a URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError('AUTH_JWKS_URL', 'must be http(s)');
    return { kind: 'jwks', url, ...jwksTiming() };
  }
  if (publicKey !== undefined) {
    // Accept a PEM with literal "\n" escapes, as env files often carry it on one line.
    const pem = publicKey.replace(/\\n/g, '\n');
    if (!pem.includes('-----BEGIN PUBLIC KEY-----')) {
      throw new ConfigError('AUTH_PUBLIC_KEY', 'must be a PEM "BEGIN PUBLIC KEY" block');
    }
    return { kind: 'public-key', pem };
  }
  if (!embedded) {
    throw new ConfigError(
      'AUTH_JWT_SECRET',
      `one of ${AUTH_VARIABLES} is required outside the embedded default`,
    );
  }
  if (isProduction(env)) {
    // The development secret is a file anyone who can read DATA_DIR can mint tokens with.
    throw new ConfigError(
      'NODE_ENV',
      `is production, which needs one of ${AUTH_VARIABLES}: the development secret is for development only`,
    );
  }
  return { kind: 'development' };
}

export function loadConfig(env: Env): Config {
  const role = parseRole(env);
  const brokers = parseBrokers(env);
  const clickhouse = parseClickHouse(env);
  const embedded = brokers === undefined && clickhouse === undefined;
  const kafkaSecurity = parseKafkaSecurity(env, brokers !== undefined);
  if (role !== 'all' && clickhouse === undefined) {
    // chDB's data directory belongs to one process, so split roles need a ClickHouse server.
    throw new ConfigError('ROLE', `"${role}" needs CLICKHOUSE_URL; the embedded store serves only ROLE=all`);
  }
  if (role !== 'all' && brokers === undefined) {
    throw new ConfigError('ROLE', `"${role}" needs KAFKA_BROKERS; the in-process bus serves only ROLE=all`);
  }
  const events = list(env, 'EVENTS_TOPICS') ?? ['platform.events'];
  for (const name of events) {
    if (!TOPIC_NAME.test(name)) throw new ConfigError('EVENTS_TOPICS', `"${name}" is not a valid Kafka topic name`);
  }
  const config: Config = {
    role,
    port: integer(env, 'PORT', 8080, 0, 65535),
    opsPort: optionalInteger(env, 'OPS_PORT', 0, 65535),
    host: optional(env, 'HOST') ?? '0.0.0.0',
    dataDir: optional(env, 'DATA_DIR') ?? './data',
    logLevel: optional(env, 'LOG_LEVEL') ?? 'info',
    kafka:
      brokers === undefined
        ? undefined
        : {
            brokers,
            clientId: optional(env, 'KAFKA_CLIENT_ID') ?? 'core-gateway',
            consumerGroup: optional(env, 'KAFKA_CONSUMER_GROUP') ?? 'core-gateway-ingest',
            partitions: integer(env, 'KAFKA_TOPIC_PARTITIONS', 6, 1, 10_000),
            ...parseReplication(env),
            producers: integer(env, 'KAFKA_PRODUCERS', 1, 1, 64),
            compression: oneOf(env, 'KAFKA_COMPRESSION', COMPRESSION_NAMES, 'none'),
            // Brokers refuse sessions under group.min.session.timeout.ms, 6 s by default.
            sessionTimeoutMs: integer(env, 'KAFKA_SESSION_TIMEOUT_MS', 10_000, 6000, 1_800_000),
            createTopics: flag(env, 'KAFKA_CREATE_TOPICS', true),
            ...kafkaSecurity,
          },
    clickhouse,
    topics: {
      events,
      ...perTopicKey((command) => topic(env, command.setting, command.default)),
      deadLetter: topic(env, 'EVENTS_DLQ_TOPIC', 'platform.events.dlq'),
    },
    auth: parseAuth(env, embedded),
    issuer: parseIssuer(env),
    audience: optional(env, 'AUTH_AUDIENCE'),
    clockToleranceSeconds: integer(env, 'AUTH_CLOCK_TOLERANCE_S', 30, 0, 300),
    tokens: {
      maxLifetimeSeconds: integer(env, 'AUTH_MAX_TOKEN_LIFETIME_S', 86_400, 60, 31_536_000),
      type: parseTokenType(env),
    },
    production: isProduction(env),
    authFailures: parseAuthFailures(env),
    trustedProxies: parseTrustedProxies(env),
    cursorSecret: secretVariable(env, 'CURSOR_SECRET'),
    commandTimeoutMs: integer(env, 'COMMAND_TIMEOUT_MS', 5000, 100, 120_000),
    http: parseHttpServer(env),
    rateLimit: parseRateLimit(env),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    // Off unless set: a kept page shows other processes' writes up to STREAM_SETTLE_MS + 2 × STREAM_POLL_MS late (docs/decisions/feed-first-page-cache.md).
    feedFirstPageMaxAgeMs: integer(env, 'FEED_FIRST_PAGE_MAX_AGE_MS', 0, 0, 60_000),
    feedBatchesInFlight: integer(env, 'FEED_BATCHES_IN_FLIGHT', PAGE_BATCHING.inFlight, 0, 64),
    ingest: parseIngest(env),
    liveTail: {
      settleMs: integer(env, 'STREAM_SETTLE_MS', 2000, 0, 600_000),
      pollMs: integer(env, 'STREAM_POLL_MS', 500, 10, 60_000),
      heartbeatMs: integer(env, 'STREAM_HEARTBEAT_MS', 15_000, 100, 300_000),
      // The caps follow measured memory and CPU per stream (docs/decisions/live-tail-limits.md).
      maxPerOrg: integer(env, 'STREAM_MAX_PER_ORG', 1000, 1, 1_000_000),
      maxPerCaller: integer(env, 'STREAM_MAX_PER_CALLER', 100, 1, 1_000_000),
      maxPerProcess: integer(env, 'STREAM_MAX_PER_PROCESS', 10_000, 1, 1_000_000),
      maxBufferBytes: integer(env, 'STREAM_MAX_BUFFER_BYTES', 262_144, 1024, 1_073_741_824),
    },
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
