import { expect } from 'chai';
import { fetchPartitionBytes, KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/kafka/message-bytes.js';

describe('bytes a fetch asks of each partition', () => {
  const MiB = 1024 * 1024;

  it('is what was asked when every topic read takes smaller record batches', () => {
    expect(fetchPartitionBytes(4 * MiB, new Map([['events', 2 * MiB]]), ['events'])).to.equal(4 * MiB);
  });

  it("is the largest record batch a topic read accepts when that is more, so no batch is ever cut", () => {
    const limits = new Map([
      ['events', 3 * MiB],
      ['telemetry', 5 * MiB],
      ['written-only', 9 * MiB],
    ]);
    expect(fetchPartitionBytes(MiB, limits, ['events', 'telemetry'])).to.equal(5 * MiB);
  });

  it("counts a topic whose limit was not read at Kafka's default, which is above 1 MiB", () => {
    expect(fetchPartitionBytes(MiB, new Map(), ['events'])).to.equal(KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  });
});
