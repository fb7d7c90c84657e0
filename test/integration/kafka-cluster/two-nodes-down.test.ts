import { expect } from 'chai';
import { busiestLeader, waitForFullIsr } from '../../support/kafka-cluster.js';
import { waitFor } from '../../support/wait-for.js';
import { allTopics, CLUSTER_NODES, clusterSuite } from './cluster-suite.js';
import { expectEachCommandOnceOnTopicAndFeed, isAcknowledged, startCommandLoad } from './command-load.js';

const CLIENTS = 10;
// Answers to commands sent while two nodes are down that the test wants to see, all of them 503.
const ANSWERS_WHILE_DOWN = 30;

describe('two of three nodes down', function () {
  this.timeout(360_000);

  it('answers 503 and never 2xx while only one replica is left, and 2xx again once a second one is back', async () => {
    const { cluster, gateway, kafka, topics, commandTopics } = clusterSuite();
    const tenant = gateway.tenant();
    const load = startCommandLoad(gateway, tenant, CLIENTS);
    try {
      await waitFor('50 commands acknowledged on the whole cluster', async () => (load.acknowledged.size >= 50 ? true : undefined), 60_000, 10);
      // The leader of the command partitions and one more: one replica of each partition is left, below min.insync.replicas.
      const leader = (await busiestLeader(kafka, commandTopics)).index;
      const second = (leader + 1) % CLUSTER_NODES;
      await cluster.kill(leader);
      await cluster.kill(second);
      const downAt = Date.now();
      const fromDown = load.answers.length;
      await waitFor(`${ANSWERS_WHILE_DOWN} answers to commands sent while two nodes are down`, async () =>
        load.answers.slice(fromDown).filter((a) => a.startedAt >= downAt).length >= ANSWERS_WHILE_DOWN ? true : undefined, 120_000, 100);
      const whileDown = load.answers.slice(fromDown).filter((a) => a.startedAt >= downAt);
      expect(whileDown.filter(isAcknowledged), '2xx answers while two of three nodes were down').to.deep.equal([]);
      expect(new Set(whileDown.map((a) => a.status)), 'statuses while two of three nodes were down').to.deep.equal(new Set([503]));
      const slowest = Math.max(...whileDown.map((a) => a.answeredAt - a.startedAt));

      const resumeAt = Date.now();
      await cluster.resume(second);
      const backAt = Date.now();
      const fromBack = load.answers.length;
      const first = await waitFor('a 2xx once a second node is back', async () => load.firstAcknowledgedSince(resumeAt, fromDown), 120_000, 20);
      console.log(
        `      nodes ${leader} and ${second} down: ${whileDown.length} answers, all 503 (slowest ${slowest} ms); node ${second} back ` +
          `${backAt - resumeAt} ms after kafka-resume.sh started; first 2xx ${first.answeredAt - backAt} ms after it was ready`,
      );
      await waitFor('a 2xx to a command sent after the node was back', async () => load.firstAcknowledgedSince(backAt, fromBack), 60_000, 20);
      await cluster.resume(leader);
      await waitForFullIsr(kafka, allTopics(topics), CLUSTER_NODES);
    } finally {
      await load.stop();
    }

    expect(load.unexpected, 'answers other than 2xx and 503').to.deep.equal([]);
    await expectEachCommandOnceOnTopicAndFeed(kafka, gateway, tenant, commandTopics, load.acknowledged);
  });
});
