import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { probeTransactions } from '../../support/kafka-probe.js';
import { createTopics } from '../../support/kafka-topics.js';
import { sharedKafka } from './kafka-suite.js';

/**
 * The operator's probe against a real open transaction: another service's producer that
 * has sent in a transaction and not finished it holds read_committed consumers back.
 */
describe('hanging-transaction probe (scripts/kafka-probe.sh)', function () {
  this.timeout(90_000);
  const topic = `probe.${randomBytes(4).toString('hex')}`;
  let producer: Producer | undefined;

  before(async () => {
    await createTopics(sharedKafka().kafka, [{ topic, numPartitions: 2 }]);
  });

  after(async () => {
    await producer?.disconnect();
    const admin = sharedKafka().kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
  });

  it('reports an open transaction as lagging, as blocked past the threshold, and nothing once it is aborted', async () => {
    const { kafka, infra } = sharedKafka();
    const broker = infra.brokers[0]!;
    producer = kafka.producer({ transactionalId: `probe-${topic}`, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const transaction = await producer.transaction();
    await transaction.send({ topic, messages: [{ value: 'unfinished', partition: 0 }] });

    const young = await probeTransactions(broker, [topic]);
    expect(young).to.deep.include({ lagging: 1, blocked: 0 });
    const [open] = young.partitions.filter((p) => p.partition === 0);
    expect(open).to.deep.include({ lastStableOffset: 0, highWatermark: 1, blocked: false });
    expect(open!.openTransactions).to.have.length(1);
    expect(open!.openTransactions[0]).to.deep.include({ startOffset: 0, coordinatorState: 'Ongoing' });

    const old = await probeTransactions(broker, [topic], 0);
    expect(old).to.deep.include({ lagging: 1, blocked: 1 });

    await transaction.abort();
    const clean = await probeTransactions(broker, [topic], 0);
    expect(clean).to.deep.include({ lagging: 0, blocked: 0 });
    expect(clean.partitions.map((p) => p.lastStableOffset === p.highWatermark)).to.deep.equal([true, true]);
  });
});
