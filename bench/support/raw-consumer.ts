/**
 * The Kafka floor for ingestion: a kafkajs consumer that reads TOPIC from the beginning
 * and does nothing with the messages; prints events/s from its first batch to the
 * batch that brought the total to EXPECTED.
 *   node --import tsx bench/support/raw-consumer.ts BROKERS TOPIC EXPECTED
 */
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';

const [brokers = '', topic = '', expected = '0'] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'bench-raw-consumer', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: `bench-raw-${randomUUID()}`, maxBytes: 64 * 1024 * 1024, maxBytesPerPartition: 16 * 1024 * 1024 });
await consumer.connect();
await consumer.subscribe({ topics: [topic], fromBeginning: true });
let read = 0;
let first: number | undefined;
const done = new Promise<number>((resolve) => {
  void consumer.run({
    partitionsConsumedConcurrently: 6,
    eachBatchAutoResolve: true,
    eachBatch: async ({ batch }) => {
      first ??= Date.now();
      read += batch.messages.length;
      if (read >= Number(expected)) resolve(Date.now());
    },
  });
});
const last = await done;
await consumer.disconnect();
console.log(JSON.stringify({ perSecond: Math.round(read / ((last - first!) / 1000)), read }));
