/**
 * The Kafka floor for commands: kafkajs sending one message per call with acks from all
 * in-sync replicas, CONCURRENCY calls in flight, for SECONDS; prints one JSON line.
 *   node --import tsx bench/support/raw-producer.ts BROKERS TOPIC CONCURRENCY SECONDS
 */
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { summarize } from './latency.js';

const [brokers = '', topic = '', concurrency = '50', seconds = '10'] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'bench-raw-producer', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 5 });
await producer.connect();
const value = JSON.stringify({ type: 'device.enroll', body: { display_name: 'Pump 7' }, padding: 'x'.repeat(200) });
const latencies: number[] = [];
let errors = 0;
const started = Date.now();
const deadline = started + Number(seconds) * 1000;
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (Date.now() < deadline) {
      const t0 = process.hrtime.bigint();
      try {
        await producer.send({ topic, acks: -1, messages: [{ key: randomUUID(), value }] });
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      } catch {
        errors += 1;
      }
    }
  }),
);
const elapsed = (Date.now() - started) / 1000;
await producer.disconnect();
console.log(JSON.stringify({ perSecond: Math.round(latencies.length / elapsed), requests: latencies.length, errors, ...summarize(latencies) }));
