import { expect } from 'chai';
import type { Producer } from 'kafkajs';
import { partitionLedger, sendCompletely } from '../../../src/kafka/complete-send.js';
import { busiestLeader, groupCoordinator, nodeIdOf, partitionStates, waitForFullIsr } from '../../support/kafka-cluster.js';
import { committedOffsets, produceContinuously, topicEnds } from '../../support/kafka-topics.js';
import { waitFor } from '../../support/wait-for.js';
import { wholeFeed } from '../kafka/feed-helpers.js';
import { allTopics, CLUSTER_NODES, clusterSuite } from './cluster-suite.js';

describe('the ingest consumer through a leader change and a group coordinator change', function () {
  this.timeout(480_000);

  it('stores every event produced throughout exactly once', async () => {
    const { cluster, gateway, kafka, topics, consumerGroup } = clusterSuite();
    const tenant = gateway.tenant();
    // Another service's producer as it has to be on kafkajs: idempotent, retrying through an
    // election, and sending again what a send left out (src/kafka/complete-send.ts).
    const ledger = partitionLedger();
    const producer: Producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 100, maxRetryTime: 1000 },
      createPartitioner: ledger.createPartitioner,
    });
    await producer.connect();
    let gaps = 0;
    const completing: Producer = {
      ...producer,
      send: (record) =>
        sendCompletely(producer, ledger, { acks: record.acks ?? -1, topicMessages: [{ topic: record.topic, messages: record.messages }] }, () => {
          gaps += 1;
        }),
    };
    const events = produceContinuously(completing, topics.events, { org_id: tenant.orgId, project_id: tenant.projectId });

    /** SIGKILLs a node and waits until the consumer has committed past everything produced before the kill, and the producer went on. */
    const killAndFollow = async (index: number, what: string) => {
      const ends = await topicEnds(kafka, topics.events);
      const producedBefore = events.produced.length;
      await cluster.kill(index);
      const killedAt = Date.now();
      await waitFor(`the consumer to commit past the events produced before ${what}, and 200 more produced`, async () => {
        events.check();
        if (events.produced.length < producedBefore + 200) return undefined;
        const committed = await committedOffsets(kafka, consumerGroup, topics.events);
        return [...ends].every(([partition, end]) => (committed.get(partition) ?? -1n) >= end) ? true : undefined;
      }, 120_000, 250);
      console.log(`      ${what} (node ${index}): the consumer committed past the events of before the kill ${Date.now() - killedAt} ms after it`);
      await cluster.resume(index);
      await waitForFullIsr(kafka, allTopics(topics), CLUSTER_NODES);
    };

    try {
      await waitFor('the consumer to be committing the event topic', async () => {
        events.check();
        const committed = await committedOffsets(kafka, consumerGroup, topics.events);
        return [...committed.values()].some((offset) => offset > 0n) ? true : undefined;
      }, 60_000, 250);

      const coordinator = await groupCoordinator(kafka, consumerGroup);
      const ledByCoordinator = (await partitionStates(kafka, [topics.events])).filter((p) => p.leader === nodeIdOf(coordinator)).length;
      await killAndFollow(coordinator, `group coordinator killed, leader of ${ledByCoordinator} event partition(s)`);
      if (ledByCoordinator === 0) {
        // The coordinator led none of the event partitions: a second kill moves their leader.
        await killAndFollow((await busiestLeader(kafka, [topics.events])).index, 'event partition leader killed');
      }
    } finally {
      await events.stop();
      await producer.disconnect();
    }

    const produced = events.produced;
    let seen = 0;
    const feed = await waitFor(`all ${produced.length} produced events in the feed`, async () => {
      const items = await wholeFeed(gateway, tenant);
      seen = items.length;
      return items.length >= produced.length ? items : undefined;
    }, 120_000, 1000).catch(async (error: unknown) => {
      const ends = await topicEnds(kafka, topics.events);
      const committed = await committedOffsets(kafka, consumerGroup, topics.events);
      throw new Error(`${(error as Error).message}: ${seen} in the feed; ends ${JSON.stringify([...ends].map(String))}, committed ${JSON.stringify([...committed].map(String))}`, { cause: error });
    });
    const counts = new Map<string, number>();
    for (const event of feed) counts.set(event.id, (counts.get(event.id) ?? 0) + 1);
    expect(produced.filter((id) => counts.get(id) !== 1), 'produced events not in the feed exactly once').to.deep.equal([]);
    expect([...counts].filter(([, n]) => n > 1), 'events in the feed twice').to.deep.equal([]);
    console.log(`      ${produced.length} events produced through the kills, each in the feed once (${feed.length} in the feed); kafkajs left partitions out of ${gaps} send(s), sent again`);
  });
});
