/**
 * The Kafka floor for ingestion: a kafkajs consumer that reads TOPIC from the beginning
 * and does nothing with the messages; prints events/s after its first batch (which also
 * waited for the group to form) up to the batch that brought the total to EXPECTED.
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
let first: { readonly at: number; readonly read: number } | undefined;
const done = new Promise<number>((resolve) => {
  void consumer.run({
    partitionsConsumedConcurrently: 6,
    eachBatchAutoResolve: true,
    eachBatch: async ({ batch }) => {
      read += batch.messages.length;
      first ??= { at: Date.now(), read };
      if (read >= Number(expected)) resolve(Date.now());
    },
  });
});
const last = await done;
await consumer.disconnect();
const elapsed = (last - first!.at) / 1000;
console.log(JSON.stringify({ perSecond: elapsed > 0 ? Math.round((read - first!.read) / elapsed) : NaN, read }));
