import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { readDeadLetter } from './dead-letter.js';
import { scopeOf } from './letter-scope.js';
import type { Progress } from './progress.js';
import { readToMarks } from './read-to-marks.js';
import { transformedValue, type Transforms } from './replay-message.js';
import { Tally } from './tally.js';

/**
 * Reads the whole dead-letter topic, up to its end when it starts, and counts it. Writes
 * nothing: its group is new each time (so it reads from the start) and commits no offset.
 */
export async function inspect(kafka: Kafka, deadLetterTopic: string, transforms: Transforms, sessionTimeoutMs: number, progress: Progress): Promise<Tally> {
  const tally = new Tally();
  try {
    await readToMarks({
      kafka,
      topic: deadLetterTopic,
      groupId: `core-gateway-dlq-inspect.${randomBytes(6).toString('hex')}`,
      sessionTimeoutMs,
      chunkSize: 1000,
      handle: async (chunk) => {
        for (const message of chunk.messages) {
          const letter = readDeadLetter(message);
          tally.add(letter, scopeOf(transformedValue(letter, transforms)), 'not-selected');
        }
        progress.update(tally);
      },
    });
  } finally {
    progress.done();
  }
  return tally;
}
