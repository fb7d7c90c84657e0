import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { createSupervisedConsumer } from '../../../src/ingest/supervised-consumer.js';
import { createLogger } from '../../../src/observability/logger.js';

describe('supervised consumer', () => {
  it('stops cleanly before it ever joined its group: pausing has nothing to pause, and says so without throwing', async () => {
    // Nothing listens here and nothing connects: start() is never called, as when a broker was down since the start.
    const kafka = new Kafka({ clientId: 'never-joined', brokers: ['127.0.0.1:9'], logLevel: logLevel.NOTHING });
    const supervised = createSupervisedConsumer({
      kafka,
      groupId: 'never-joined',
      topics: ['platform.events'],
      sessionTimeoutMs: 10_000,
      fetch: { minBytes: 1, maxBytesPerPartition: 1024, maxBytes: 1024 },
      run: { eachBatch: async () => undefined },
      onRebalance: () => undefined,
      onFilteredBatch: () => undefined,
      beforeFetching: async () => undefined,
      metadataMaxAgeMs: 10_000,
      logger: createLogger('silent'),
    });
    // kafkajs itself refuses: this is what the stop used to throw.
    expect(() => kafka.consumer({ groupId: 'bare' }).pause([{ topic: 'platform.events' }])).to.throw('Consumer group was not initialized');
    expect(() => supervised.pauseAll()).to.not.throw();
    await supervised.stop();
  });
});
