import { expect } from 'chai';
import type { Message, ProducerBatch, RecordMetadata, Transaction } from 'kafkajs';
import { KafkaJSProtocolError } from 'kafkajs';
import { defaultTransactionalIdPrefix, isProducerFenced, sendLettersAndOffset, transactionalId, type TransactionalProducer } from '../../../src/ingest/dead-letter-writer.js';
import { partitionLedger } from '../../../src/kafka/complete-send.js';

/** A producer whose transactions note each call in order; `failAt` makes that call throw. */
function recordingProducer(failAt?: 'sendBatch' | 'sendOffsets' | 'commit') {
  const calls: string[] = [];
  let active = false;
  const ledger = partitionLedger();
  const partitioner = ledger.createPartitioner();
  const step = (name: string) => {
    calls.push(name);
    if (name === failAt) throw new Error(`${name} failed`);
  };
  const transaction = {
    sendBatch: async (batch: ProducerBatch): Promise<RecordMetadata[]> => {
      step('sendBatch');
      const topic = batch.topicMessages![0]!.topic;
      for (const message of batch.topicMessages![0]!.messages) partitioner({ topic, message, partitionMetadata: [{ partitionId: 0, leader: 1, partitionErrorCode: 0, replicas: [1], isr: [1] }] });
      return [{ topicName: topic, partition: 0, errorCode: 0 }];
    },
    sendOffsets: async (offsets: Parameters<Transaction['sendOffsets']>[0]) => {
      const [{ topic, partitions }] = offsets.topics as [{ topic: string; partitions: { partition: number; offset: string }[] }];
      calls.push(`offsets ${offsets.consumerGroupId} ${topic}/${partitions[0]!.partition}@${partitions[0]!.offset}`);
      step('sendOffsets');
    },
    commit: async () => {
      step('commit');
      active = false;
    },
    abort: async () => {
      calls.push('abort');
      active = false;
    },
    isActive: () => active,
  };
  const producer: TransactionalProducer = {
    transaction: async () => {
      calls.push('begin');
      active = true;
      return transaction as unknown as Transaction;
    },
  };
  return { producer, ledger, calls };
}

const letters = (count: number): Message[] => Array.from({ length: count }, (_, i) => ({ key: `k${i}`, value: Buffer.from(`letter ${i}`) }));
const source = { topic: 'platform.events', partition: 3, next: '42', groupId: 'core-gateway-ingest', topicOut: 'platform.events.dlq', compression: 'none' as const };

describe('dead letters and their offset in one transaction', () => {
  it('sends every letter, then the batch offset to the group, then commits', async () => {
    const { producer, ledger, calls } = recordingProducer();
    await sendLettersAndOffset(producer, ledger, [letters(2), letters(1)], source);
    expect(calls).to.deep.equal(['begin', 'sendBatch', 'sendBatch', 'offsets core-gateway-ingest platform.events/3@42', 'sendOffsets', 'commit']);
  });

  for (const failAt of ['sendBatch', 'sendOffsets', 'commit'] as const) {
    it(`aborts, committing nothing, when ${failAt} fails`, async () => {
      const { producer, ledger, calls } = recordingProducer(failAt);
      const failed = await sendLettersAndOffset(producer, ledger, [letters(1)], source).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failed).to.be.instanceOf(Error);
      // Nothing after the failed step but the abort: a failed commit is aborted too, not retried here.
      expect(calls.slice(calls.indexOf(failAt) + 1)).to.deep.equal(['abort']);
    });
  }

  it('names one transactional id per input partition, by default after the group', () => {
    const prefix = defaultTransactionalIdPrefix('core-gateway-ingest');
    expect(transactionalId(prefix, 'platform.events', 3)).to.equal('core-gateway-ingest.dead-letters.platform.events.3');
    expect(transactionalId(prefix, 'platform.events', 4)).to.not.equal(transactionalId(prefix, 'platform.events', 3));
  });

  it('tells a producer fenced by a newer one from other failures, through causes too', () => {
    const fenced = Object.assign(new KafkaJSProtocolError('epoch'), { type: 'INVALID_PRODUCER_EPOCH' });
    expect(isProducerFenced(fenced)).to.equal(true);
    expect(isProducerFenced(new Error('wrapped', { cause: fenced }))).to.equal(true);
    expect(isProducerFenced(new Error('leader not available'))).to.equal(false);
  });
});
