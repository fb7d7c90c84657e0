/**
 * Entry point of a consumer-only process: reads the event topics (EVENTS_TOPICS) and the
 * two command topics into ClickHouse, and serves only /healthz, /readyz and /metrics over
 * HTTP (on PORT, or on OPS_PORT when that is set). Equivalent to `ROLE=consumer npm start`;
 * needs KAFKA_BROKERS and CLICKHOUSE_URL.
 */
process.env['ROLE'] = 'consumer';
await import('../src/main.js');
