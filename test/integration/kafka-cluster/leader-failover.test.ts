import { expect } from 'chai';
import { busiestLeader, nodeIdOf, partitionStates, waitForFullIsr } from '../../support/kafka-cluster.js';
import { waitFor } from '../../support/wait-for.js';
import { allTopics, CLUSTER_NODES, clusterSuite } from './cluster-suite.js';
import { expectEachCommandOnceOnTopicAndFeed, isAcknowledged, startCommandLoad, type Answer } from './command-load.js';

// One kill in npm test; `npm run test:failover` runs more (FAILOVER_KILLS).
const KILLS = Number(process.env['FAILOVER_KILLS'] ?? '1');
const CLIENTS = 50;
// Acknowledged commands between two kills, so every kill lands on a gateway at full speed.
const COMMANDS_BETWEEN_KILLS = 300;

interface Round {
  readonly killed: number;
  /** `topic/partition` of each command partition the killed node led. */
  readonly led: ReadonlySet<string>;
  readonly partitions: number;
  /** When the killed process was gone. */
  readonly killedAt: number;
  /** Index of the first answer recorded after the kill began. */
  readonly fromAnswer: number;
  /** Index of the first answer recorded after the node was back. */
  readonly toAnswer: number;
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);

describe(`the leader of the command partitions SIGKILLed under ${CLIENTS} clients (${KILLS} kill${KILLS === 1 ? '' : 's'})`, function () {
  this.timeout(180_000 + KILLS * 240_000);

  it('answers 2xx again after the election with no gateway restart, every acknowledged command is on its topic, and the feed holds each command once', async () => {
    const { cluster, gateway, kafka, topics, commandTopics } = clusterSuite();
    const tenant = gateway.tenant();
    const load = startCommandLoad(gateway, tenant, CLIENTS);
    const rounds: Round[] = [];
    try {
      for (let kill = 1; kill <= KILLS; kill += 1) {
        const target = load.acknowledged.size + COMMANDS_BETWEEN_KILLS;
        await waitFor(`${target} commands acknowledged before kill ${kill}`, async () => (load.acknowledged.size >= target ? true : undefined), 120_000, 10);
        const leader = await busiestLeader(kafka, commandTopics);
        const before = await partitionStates(kafka, commandTopics);
        const led = before.filter((p) => p.leader === nodeIdOf(leader.index));
        const fromAnswer = load.answers.length;
        await cluster.kill(leader.index);
        // From when the process is gone: the script takes a moment to get to the SIGKILL, and
        // the old leader may still answer a command sent in that moment.
        const killedAt = Date.now();
        await waitFor(`a 2xx to a command sent after kill ${kill} (node ${leader.index})`, async () => load.firstAcknowledgedSince(killedAt, fromAnswer), 90_000, 20);
        // The broker the test asks may learn of the election a moment after the gateway's new leader answered.
        await waitFor(`a new leader for the ${led.length} command partitions node ${leader.index} led`, async () => {
          const now = await partitionStates(kafka, commandTopics);
          return led.every((p) => now.some((q) => q.topic === p.topic && q.partition === p.partition && q.leader >= 0 && q.leader !== p.leader)) ? true : undefined;
        }, 30_000, 100);
        await cluster.resume(leader.index);
        await waitForFullIsr(kafka, allTopics(topics), CLUSTER_NODES);
        rounds.push({
          killed: leader.index,
          led: new Set(led.map((p) => `${p.topic}/${p.partition}`)),
          partitions: before.length,
          killedAt,
          fromAnswer,
          toAnswer: load.answers.length,
        });
      }
      // And the gateway still takes commands at the end, on the cluster whole again.
      const end = Date.now();
      const from = load.answers.length;
      await waitFor('a 2xx after the last resume', async () => load.firstAcknowledgedSince(end, from), 60_000, 20);
    } finally {
      await load.stop();
    }

    expect(load.unexpected, 'answers other than 2xx and 503').to.deep.equal([]);
    const placement = await expectEachCommandOnceOnTopicAndFeed(kafka, gateway, tenant, commandTopics, load.acknowledged);

    // Per kill: the first 2xx to a command sent after the kill to a partition the killed
    // node led, which only a new leader can have written.
    const firstMoved = (round: Round): Answer | undefined =>
      load.answers
        .slice(round.fromAnswer, round.toAnswer)
        .filter((a) => a.startedAt >= round.killedAt && isAcknowledged(a) && round.led.has(placement.get(a.commandId!) ?? ''))
        .sort((a, b) => a.answeredAt - b.answeredAt)[0];
    rounds.forEach((round, i) => {
      const moved = firstMoved(round);
      expect(moved, `a 2xx on a partition node ${round.killed} led, after kill ${i + 1}`).to.not.equal(undefined);
      const window = load.answers.slice(round.fromAnswer, round.toAnswer);
      console.log(
        `      kill ${i + 1}: node ${round.killed} (leader of ${round.led.size} of ${round.partitions} command partitions); ` +
          `first 2xx on one of them ${seconds(moved!.answeredAt - round.killedAt)} s after the node was gone; ` +
          `until the node was back: ${window.filter(isAcknowledged).length} answered 2xx, ${window.filter((a) => a.status === 503).length} answered 503`,
      );
    });
    const acknowledged = load.answers.filter(isAcknowledged).length;
    const unavailable = load.answers.filter((a) => a.status === 503).length;
    console.log(
      `      ${KILLS} kill(s): ${acknowledged} commands acknowledged, ${unavailable} answered 503, ` +
        `${placement.size - load.acknowledged.size} of those written anyway; none lost or doubled`,
    );
  });
});
