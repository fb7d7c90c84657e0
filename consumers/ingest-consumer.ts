/**
 * Entry point of a consumer-only process: reads EVENTS_TOPICS into ClickHouse and serves
 * no HTTP. Equivalent to `ROLE=consumer npm start`; needs KAFKA_BROKERS and CLICKHOUSE_URL.
 */
process.env['ROLE'] = 'consumer';
await import('../src/main.js');
