import { expect } from 'chai';
import { createRequire } from 'node:module';
import type { ICustomPartitioner, Message, PartitionMetadata, ProducerBatch, RecordMetadata } from 'kafkajs';
import { partitionLedger, sendCompletely } from '../../../src/kafka/complete-send.js';

// kafkajs's own send path, driven against a fake cluster: what its producer runs inside sendBatch().
const require = createRequire(import.meta.url);
type Partitioner = ReturnType<ICustomPartitioner>;
interface ProduceRequest {
  readonly topicData: { topic: string; partitions: { partition: number; messages: Message[] }[] }[];
}
type SendMessages = (request: { acks: number; topicMessages: { topic: string; messages: Message[] }[] }) => Promise<RecordMetadata[]>;
const createSendMessages = require('kafkajs/src/producer/sendMessages.js') as (deps: Record<string, unknown>) => SendMessages;
const createRetry = require('kafkajs/src/retry/index.js') as (options: Record<string, number>) => unknown;
const { KafkaJSConnectionError } = require('kafkajs/src/errors.js') as { KafkaJSConnectionError: new (message: string) => Error };

const TOPIC = 'commands';

const partitionMetadata = (partitionId: number, leader: number): PartitionMetadata => ({ partitionErrorCode: 0, partitionId, leader, replicas: [1, 2], isr: [1, 2] });

/**
 * Two partitions: 0 led by broker 1, 1 led by broker 2. Broker 1 dies during the first
 * produce; the metadata refreshed after that names broker 2 leader of both, as an election
 * would. Broker 2 records every produce request it gets.
 */
function clusterWhereALeaderDies(partitioner: Partitioner) {
  const leaders = new Map([[0, 1], [1, 2]]);
  const received: ProduceRequest[] = [];
  const answer = (request: ProduceRequest) => ({
    topics: request.topicData.map((t) => ({
      topicName: t.topic,
      partitions: t.partitions.map((p) => ({ partition: p.partition, errorCode: 0, baseOffset: '0', logAppendTime: '-1', logStartOffset: '0' })),
    })),
  });
  const brokers = new Map([
    [1, { nodeId: 1, produce: async () => { throw new KafkaJSConnectionError('Connection error: read ECONNRESET'); } }],
    [2, { nodeId: 2, produce: async (request: ProduceRequest) => { received.push(request); return answer(request); } }],
  ]);
  const cluster = {
    addMultipleTargetTopics: async () => undefined,
    refreshMetadataIfNecessary: async () => undefined,
    refreshMetadata: async () => {
      leaders.set(0, 2);
    },
    isConnected: () => true,
    removeBroker: () => undefined,
    findTopicPartitionMetadata: (): PartitionMetadata[] => [...leaders].map(([partitionId, leader]) => partitionMetadata(partitionId, leader)),
    findLeaderForPartitions: (_topic: string, partitions: string[]) => {
      const byLeader: Record<number, number[]> = {};
      for (const partition of partitions.map(Number)) (byLeader[leaders.get(partition)!] ??= []).push(partition);
      return byLeader;
    },
    // kafkajs passes node ids as the keys of an object: strings.
    findBroker: async ({ nodeId }: { nodeId: string }) => brokers.get(Number(nodeId))!,
  };
  const eosManager = {
    isTransactional: () => false,
    acquireBrokerLock: async () => undefined,
    releaseBrokerLock: async () => undefined,
    getSequence: () => 0,
    updateSequence: () => undefined,
    getProducerId: () => -1,
    getProducerEpoch: () => 0,
  };
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const sendMessages = createSendMessages({
    logger: quiet,
    cluster,
    partitioner,
    eosManager,
    retrier: createRetry({ retries: 3, initialRetryTime: 1, maxRetryTime: 5, factor: 0, multiplier: 1 }),
  });
  const producer = {
    sendBatch: (batch: ProducerBatch) => sendMessages({ acks: -1, topicMessages: (batch.topicMessages ?? []).map((t) => ({ topic: t.topic, messages: t.messages })) }),
  };
  return { producer, received };
}

const byExplicitPartition: Partitioner = ({ message }) => message.partition!;
const messages = (): Message[] => [
  { partition: 0, key: 'a', value: 'to partition 0' },
  { partition: 1, key: 'b', value: 'to partition 1' },
];

describe('kafkajs 2.2.4 sendBatch when a leader dies mid-send', () => {
  it('resolves without writing the partitions that moved to a broker that had already answered', async () => {
    const { producer, received } = clusterWhereALeaderDies(byExplicitPartition);
    const answered = await producer.sendBatch({ topicMessages: [{ topic: TOPIC, messages: messages() }] });
    // The send "succeeded", with an answer for partition 1 only; partition 0's message went nowhere.
    expect(answered.map((a) => a.partition)).to.deep.equal([1]);
    expect(received.flatMap((r) => r.topicData.flatMap((t) => t.partitions.map((p) => p.partition)))).to.deep.equal([1]);
  });
});

describe('sendCompletely', () => {
  it('sends again the messages of the partitions the answer left out', async () => {
    const ledger = partitionLedger();
    const { producer, received } = clusterWhereALeaderDies(ledger.createPartitioner());
    const gaps: unknown[] = [];
    const answered = await sendCompletely(producer, ledger, { topicMessages: [{ topic: TOPIC, messages: messages() }] }, (missing) => gaps.push(missing));
    expect(answered.map((a) => a.partition).sort()).to.deep.equal([0, 1]);
    expect(received.map((r) => r.topicData.flatMap((t) => t.partitions.map((p) => [p.partition, p.messages.map((m) => m.value)])))).to.deep.equal([
      [[1, ['to partition 1']]],
      [[0, ['to partition 0']]],
    ]);
    expect(gaps).to.deep.equal([[{ topic: TOPIC, partition: 0, messages: 1 }]]);
  });

  it('sends once when every partition answered', async () => {
    const ledger = partitionLedger();
    const partitioner = ledger.createPartitioner();
    const calls: ProducerBatch[] = [];
    const producer = {
      sendBatch: async (batch: ProducerBatch): Promise<RecordMetadata[]> => {
        calls.push(batch);
        const metadata = [partitionMetadata(0, 1), partitionMetadata(1, 1)];
        const partitions = new Set((batch.topicMessages ?? []).flatMap((t) => t.messages.map((message) => partitioner({ topic: t.topic, partitionMetadata: metadata, message }))));
        return [...partitions].map((partition) => ({ topicName: TOPIC, partition, errorCode: 0 }));
      },
    };
    await sendCompletely(producer, ledger, { topicMessages: [{ topic: TOPIC, messages: messages() }] });
    expect(calls).to.have.length(1);
  });
});
