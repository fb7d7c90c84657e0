/**
 * The Kafka floor for ingestion: a kafkajs consumer that reads TOPIC from the beginning
 * and does nothing with the messages; prints events/s from the moment it joined its group
 * (so the group's formation delay is left out, and its first fetch counted) to the batch
 * that brought the total to EXPECTED.
 *   node --import tsx bench/support/raw-consumer.ts BROKERS TOPIC EXPECTED
 */
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { registerCompressionCodecs } from '../../src/kafka/compression-codecs.js';

registerCompressionCodecs();
const [brokers = '', topic = '', expected = '0'] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'bench-raw-consumer', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: `bench-raw-${randomUUID()}`, maxBytes: 64 * 1024 * 1024, maxBytesPerPartition: 16 * 1024 * 1024 });
await consumer.connect();
await consumer.subscribe({ topics: [topic], fromBeginning: true });
let read = 0;
let joined: number | undefined;
consumer.on(consumer.events.GROUP_JOIN, () => {
  joined ??= Date.now();
});
const done = new Promise<number>((resolve) => {
  void consumer.run({
    partitionsConsumedConcurrently: 6,
    eachBatchAutoResolve: true,
    eachBatch: async ({ batch }) => {
      read += batch.messages.length;
      if (read >= Number(expected)) resolve(Date.now());
    },
  });
});
const last = await done;
await consumer.disconnect();
const elapsed = (last - (joined ?? last)) / 1000;
console.log(JSON.stringify({ perSecond: elapsed > 0 ? Math.round(read / elapsed) : null, read }));
