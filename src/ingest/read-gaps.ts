/** Offsets of a partition that reading jumped over: deleted before they were read. */
export interface ReadGap {
  readonly topic: string;
  readonly partition: number;
  /** The first offset not read. */
  readonly first: bigint;
  /** The last offset not read. */
  readonly last: bigint;
  /** Offsets from `first` to `last`: an upper bound on the messages, since a transaction's marker takes an offset too. */
  readonly count: bigint;
}

export interface ReadGaps {
  /** The partition is read next from `offset`: its committed offset, read after a join before anything was fetched. */
  expect(topic: string, partition: number, offset: bigint): void;
  /**
   * A batch of the partition was fetched from `fetched` and read up to `next` (exclusive).
   * Returns the offsets skipped before it, when it starts past where reading was expected to
   * go on. A batch that starts below it (a committed offset past the partition's end, read
   * again from its start) skips nothing.
   */
  read(topic: string, partition: number, fetched: bigint, next: bigint): ReadGap | undefined;
  /** Forgets every partition: after a rebalance each one is read from its committed offset, which `expect` gives again. */
  clear(): void;
}

/**
 * Where each partition's reading is expected to go on, so that a jump over offsets nobody
 * read shows. kafkajs, sent to an offset below a partition's log start (retention or
 * deleteRecords deleted the records first), moves to the log start on its own and tells the
 * caller nothing (kafkajs 2.2.4, consumerGroup.js recoverFromOffsetOutOfRange): the next
 * batch then starts past where the last one ended, or past the committed offset a
 * generation began from. Offsets are the batches' fetch offsets, not their first records'
 * (which on a compacted topic may lie past a fetch offset with nothing deleted).
 */
export function createReadGaps(): ReadGaps {
  const expected = new Map<string, bigint>();
  const key = (topic: string, partition: number) => `${topic}/${partition}`;
  return {
    expect(topic, partition, offset) {
      expected.set(key(topic, partition), offset);
    },
    read(topic, partition, fetched, next) {
      const name = key(topic, partition);
      const from = expected.get(name);
      // A partition with no committed offset is read from its start: there is no position to compare until its first batch.
      expected.set(name, next);
      if (from === undefined || fetched <= from) return undefined;
      return { topic, partition, first: from, last: fetched - 1n, count: fetched - from };
    },
    clear() {
      expected.clear();
    },
  };
}
