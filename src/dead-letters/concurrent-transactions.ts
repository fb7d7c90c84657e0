import { setTimeout as sleep } from 'node:timers/promises';

const ATTEMPTS = 50;
const PAUSE_MS = 20;

/**
 * Runs a step of a transaction again while the coordinator answers CONCURRENT_TRANSACTIONS:
 * right after a commit it is still writing the previous transaction's markers, and it
 * refuses to add partitions or offsets to the next one until it is done. kafkajs retries
 * that answer on start (initProducerId) but not on AddOffsetsToTxn. The refused request
 * changed nothing, so sending it again is safe.
 */
export async function whileConcurrent<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await step();
    } catch (error) {
      const type = (error as { type?: unknown }).type;
      if (type !== 'CONCURRENT_TRANSACTIONS' || attempt >= ATTEMPTS) throw error;
      // The coordinator's pace, not a wait for a condition we could observe from here.
      await sleep(PAUSE_MS * Math.min(attempt, 10));
    }
  }
}
