import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { createSupervisedConsumer, type SupervisedConsumer } from '../../../src/ingest/supervised-consumer.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createTopics } from '../../support/kafka-topics.js';
import { waitFor } from '../../support/wait-for.js';
import { groupMembers } from './ingest-group.js';
import { sharedKafka } from './kafka-suite.js';

interface TestMember {
  readonly supervised: SupervisedConsumer;
  /** Every consumer.run() called, settled or not: a join still in flight has not shown in the group yet. */
  readonly runs: Promise<void>[];
  /** How many of them have connected to the broker. */
  connected(): number;
  /** How many JoinGroup requests they have sent. */
  joinsSent(): number;
  readonly groupId: string;
  readonly topic: string;
}

/** A supervised ingest member on a topic and group of its own, watched through the kafkajs consumers it creates. */
async function member(label: string): Promise<TestMember> {
  const { kafka } = sharedKafka();
  const suffix = randomBytes(4).toString('hex');
  const topic = `platform.events.${label}.${suffix}`;
  const groupId = `core-gateway-ingest-${label}-${suffix}`;
  await createTopics(kafka, [{ topic, numPartitions: 3 }]);
  const runs: Promise<void>[] = [];
  let connected = 0;
  let joinsSent = 0;
  const counting = Object.create(kafka) as Kafka;
  counting.consumer = (config) => {
    const consumer = kafka.consumer(config);
    consumer.on(consumer.events.REQUEST, ({ payload }) => {
      if (payload.apiName === 'JoinGroup') joinsSent += 1;
    });
    const connect = consumer.connect.bind(consumer);
    consumer.connect = async () => {
      await connect();
      connected += 1;
    };
    const run = consumer.run.bind(consumer);
    consumer.run = (runConfig) => {
      const running = run(runConfig);
      runs.push(running);
      return running;
    };
    return consumer;
  };
  const supervised = createSupervisedConsumer({
    kafka: counting,
    groupId,
    topics: [topic],
    sessionTimeoutMs: 30_000,
    fetch: { minBytes: 1, maxBytesPerPartition: 1 << 20, maxBytes: 1 << 20 },
    run: { eachBatch: async () => undefined },
    onRebalance: () => undefined,
    onFilteredBatch: () => undefined,
    beforeFetching: async () => undefined,
    metadataMaxAgeMs: 10_000,
    logger: createLogger('silent'),
  });
  return { supervised, runs, connected: () => connected, joinsSent: () => joinsSent, groupId, topic };
}

/** The group's members once every join the member began has answered, so a member left behind would be in it. */
async function membersAfterJoins(m: TestMember): Promise<string> {
  await Promise.allSettled(m.runs);
  const group = await groupMembers(sharedKafka().kafka, m.groupId, m.topic);
  return JSON.stringify(group.members);
}

/**
 * kafkajs drops a consumer disconnected on its way into the group (connecting, finding its
 * coordinator, joining) without stopping it: it connects again, joins, and holds partitions
 * for ever with nothing committing them. These stop a member at those moments and ask the
 * coordinator who is left once every join begun has answered.
 */
describe('an ingest member stopped while it is still joining', function () {
  this.timeout(120_000);

  it('leaves no member behind when stopped right after start', async () => {
    const m = await member('stop-at-start');
    const starting = m.supervised.start();
    await m.supervised.stop();
    await starting;
    expect(m.runs, 'joins begun after the stop').to.have.length(0);
    expect(await membersAfterJoins(m), `members of ${m.groupId}`).to.equal('[]');
  });

  it("leaves no member behind when stopped while its join waits on the group's rebalance", async () => {
    const m = await member('stop-in-join');
    const { infra } = sharedKafka();
    // A member already in the group: a new member's JoinGroup waits until this one rejoins,
    // which it does at a heartbeat after its fetch returns, seconds with a 5 s fetch wait.
    const bystander = new Kafka({ clientId: 'bystander', brokers: infra.brokers, logLevel: logLevel.NOTHING }).consumer({
      groupId: m.groupId,
      heartbeatInterval: 3000,
      maxWaitTimeInMs: 5000,
    });
    try {
      await bystander.connect();
      await bystander.subscribe({ topics: [m.topic] });
      await bystander.run({ eachBatch: async () => undefined });
      const starting = m.supervised.start();
      let joined = false;
      void Promise.allSettled([starting]).then(() => (joined = true));
      await waitFor("the member's join sent", async () => (m.joinsSent() >= 1 ? true : undefined), 30_000, 5);
      expect(joined, 'the join answered before the stop').to.equal(false);
      await m.supervised.stop();
      await starting;
      const group = await groupMembers(sharedKafka().kafka, m.groupId, m.topic);
      await Promise.allSettled(m.runs);
      const after = await groupMembers(sharedKafka().kafka, m.groupId, m.topic);
      expect([group, after].map((g) => g.members.filter((member) => !member.memberId.startsWith('bystander')))).to.deep.equal([[], []]);
    } finally {
      await m.supervised.stop();
      await bystander.disconnect();
    }
  });

  it('leaves no member behind when stopped while the member replacing a rejoined one starts', async () => {
    const m = await member('stop-at-rejoin');
    try {
      await m.supervised.start();
      expect((await groupMembers(sharedKafka().kafka, m.groupId, m.topic)).members).to.have.length(1);
      m.supervised.rejoin();
      // Connected, and on its way to subscribe and join: a stop from here on must wait for it.
      await waitFor('the replacing consumer connected', async () => (m.connected() >= 2 ? true : undefined), 30_000, 5);
    } finally {
      await m.supervised.stop();
    }
    expect(await membersAfterJoins(m), `members of ${m.groupId}`).to.equal('[]');
  });
});
