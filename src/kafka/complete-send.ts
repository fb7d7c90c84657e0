import { Partitioners, type ICustomPartitioner, type Message, type Producer, type ProducerBatch, type RecordMetadata, type TopicMessages } from 'kafkajs';

/**
 * kafkajs 2.2.4 can resolve a send without having written all of it. One send keeps one
 * answer per broker across its retries (`responsePerBroker` in its
 * src/producer/sendMessages.js) and on a retry sends only to brokers without an answer.
 * When a broker dies during a send that also went to other brokers, and its partitions'
 * new leader is one of those that already answered, the retry finds nothing to send and
 * the send resolves: the moved partitions' messages were never written, yet acknowledged.
 * Seen on a three-node cluster (docs/decisions/kafka-send-completion.md) and reproduced in
 * test/unit/kafka/complete-send.test.ts.
 *
 * The answer still tells it: it has no entry for a partition that was left out. So the
 * producer's partitioner notes the partition of every message, and sendCompletely() sends
 * again the messages of every partition missing from the answer, on the same producer: if
 * the dead leader had written them after all, the idempotent producer's sequence numbers
 * make the broker drop the copy.
 */
export interface PartitionLedger {
  /** For the producer's `createPartitioner`: kafkajs's default partitioner, noting each message's partition. */
  readonly createPartitioner: ICustomPartitioner;
  partitionOf(message: Message): number | undefined;
}

export function partitionLedger(): PartitionLedger {
  const partitions = new WeakMap<Message, number>();
  return {
    createPartitioner: () => {
      const partitioner = Partitioners.DefaultPartitioner();
      return (args) => {
        const partition = partitioner(args);
        partitions.set(args.message, partition);
        return partition;
      };
    },
    partitionOf: (message) => partitions.get(message),
  };
}

/** How often the left-out partitions of one send are sent again before the send fails. */
const MAX_COMPLETIONS = 10;

/**
 * producer.sendBatch(), and again for the messages of any partition its answer left out,
 * until every partition written to has answered. `onGap` hears of each gap (for a log line).
 * The producer must have been created with `ledger.createPartitioner`.
 */
export async function sendCompletely(
  producer: Pick<Producer, 'sendBatch'>,
  ledger: PartitionLedger,
  batch: ProducerBatch,
  onGap?: (missing: readonly { topic: string; partition: number; messages: number }[]) => void,
): Promise<RecordMetadata[]> {
  const answers: RecordMetadata[] = [];
  let pending: TopicMessages[] = batch.topicMessages ?? [];
  for (let attempt = 0; ; attempt += 1) {
    const answered = await producer.sendBatch({ ...batch, topicMessages: pending });
    answers.push(...answered);
    const written = new Set(answered.map((a) => `${a.topicName}/${a.partition}`));
    const missing = new Map<string, { topic: string; partition: number; messages: number }>();
    pending = pending
      .map(({ topic, messages }) => ({
        topic,
        messages: messages.filter((message) => {
          const partition = ledger.partitionOf(message);
          if (partition === undefined) throw new Error('sendCompletely needs a producer created with the ledger\'s partitioner');
          if (written.has(`${topic}/${partition}`)) return false;
          const gap = missing.get(`${topic}/${partition}`) ?? { topic, partition, messages: 0 };
          missing.set(`${topic}/${partition}`, { ...gap, messages: gap.messages + 1 });
          return true;
        }),
      }))
      .filter(({ messages }) => messages.length > 0);
    if (pending.length === 0) return answers;
    onGap?.([...missing.values()]);
    if (attempt + 1 >= MAX_COMPLETIONS) {
      throw new Error(`kafkajs left out partitions ${[...missing.keys()].join(', ')} of a send ${MAX_COMPLETIONS} times`);
    }
  }
}
