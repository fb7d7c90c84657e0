import { expect } from 'chai';
import { randomInt } from 'node:crypto';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { probeTransactions, type ProbeReport } from '../../support/kafka-probe.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { wholeFeed } from './feed-helpers.js';
import { describeOnEachStore } from './kafka-suite.js';
import { readToEnd } from '../../support/kafka-topics.js';
import { commandTopicList } from '../../support/command-topics.js';

// A few kills in npm test; `npm run test:broker-crash` runs the full schedule.
const KILLS = Number(process.env['BROKER_CRASH_KILLS'] ?? '3');
// As many as the fault scenario names: 50 keep the broker busy in every phase of a kill.
const CLIENTS = 50;
// The moment of each kill: after this many more acknowledged commands, drawn at random.
const MAX_COMMANDS_BETWEEN_KILLS = 60;

interface History {
  /** command_id of every command answered 2xx. */
  readonly acknowledged: Set<string>;
  unavailable: number;
  readonly unexpected: string[];
}

/** Clients that send enrollments and edge-policy patches back to back until stopped, recording every answer. */
function startLoad(gateway: TestGateway, tenant: Tenant, history: History): { stop(): Promise<void> } {
  let running = true;
  const client = async (n: number) => {
    const headers = await tenant.headers();
    for (let i = 0; running; i += 1) {
      const fleetId = uuid();
      const res =
        (n + i) % 2 === 0
          ? await gateway.call<{ data: { enrollment_id: string } }>('POST', `/projects/${tenant.projectId}/fleets/${fleetId}/devices/${uuid()}/enroll`, { headers, body: { external_id: `c${n}-${i}` } })
          : await gateway.call<{ data: { command_id: string } }>('PATCH', `/projects/${tenant.projectId}/fleets/${fleetId}/edge/policy`, { headers, body: { round: i } });
      if (res.status === 202) history.acknowledged.add((res.body.data as { enrollment_id: string }).enrollment_id);
      else if (res.status === 200) history.acknowledged.add((res.body.data as { command_id: string }).command_id);
      else if (res.status === 503) history.unavailable += 1;
      else history.unexpected.push(`${res.status} ${res.text}`);
    }
  };
  const clients = Array.from({ length: CLIENTS }, (_, n) => client(n));
  return {
    async stop() {
      running = false;
      await Promise.all(clients);
    },
  };
}

describeOnEachStore(`broker SIGKILLed under concurrent commands (${KILLS} kills)`, function (suite) {
  this.timeout(120_000 + KILLS * 90_000);

  before(function () {
    if (suite().infra.broker === undefined) {
      console.log('      external Kafka is not ours to kill: TEST_INFRA=external skips the crash test by choice');
      this.skip();
    }
  });

  it('leaves no partition blocked, every acknowledged command on its topic and in the feed exactly once, and ingestion going', async () => {
    const { gateway, infra, kafka, topics } = suite();
    const written = [...commandTopicList(topics.commands), topics.events, topics.deadLetter];
    const tenant = gateway.tenant();
    const history: History = { acknowledged: new Set(), unavailable: 0, unexpected: [] };
    const otherServices = kafka.producer();
    await otherServices.connect();
    const load = startLoad(gateway, tenant, history);
    const otherEvents: CanonicalEvent[] = [];
    try {
      for (let kill = 1; kill <= KILLS; kill += 1) {
        const target = history.acknowledged.size + randomInt(MAX_COMMANDS_BETWEEN_KILLS + 1);
        await waitFor(`command ${target} acknowledged before kill ${kill}`, async () => (history.acknowledged.size >= target ? true : undefined), 60_000, 5);
        await infra.broker!.takeDown();
        await infra.broker!.bringBack();

        const before = history.acknowledged.size;
        await waitFor(`a 2xx within 30 s of the broker's return after kill ${kill}`, async () => (history.acknowledged.size > before ? true : undefined), 30_000, 50);

        const event = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, source_service: `other-${kill}` });
        otherEvents.push(event);
        await waitFor('the other service to reach the broker', async () => {
          await otherServices.send({ topic: topics.events, acks: -1, messages: [{ key: event.device_id!, value: JSON.stringify(event) }] });
          return true;
        }, 60_000, 500);

        let last: unknown;
        await waitFor(`every partition stable after kill ${kill}`, async () => {
          last = await probeTransactions(infra.brokers[0]!, written).catch((error: unknown) => error);
          const report = last as ProbeReport;
          return report.lagging === 0 && report.blocked === 0 ? report : undefined;
        }, 30_000, 250).catch((error: unknown) => {
          throw new Error(`${(error as Error).message}; the probe's last answer: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
        });
      }
    } finally {
      await load.stop();
      await otherServices.disconnect();
    }

    expect(history.unexpected, 'answers other than 2xx and 503').to.deep.equal([]);
    const onTopics = await readToEnd(kafka, commandTopicList(topics.commands));
    const commandCounts = new Map<string, number>();
    for (const message of onTopics) {
      const command = JSON.parse(message.value!) as { command_id: string; org_id: string };
      if (command.org_id === tenant.orgId) commandCounts.set(command.command_id, (commandCounts.get(command.command_id) ?? 0) + 1);
    }
    const missing = [...history.acknowledged].filter((id) => commandCounts.get(id) !== 1);
    expect(missing, 'acknowledged commands not on their topic exactly once').to.deep.equal([]);
    const doubled = [...commandCounts].filter(([, n]) => n > 1);
    expect(doubled, 'commands written twice').to.deep.equal([]);

    // The feed ends with one event per command on the topics (acknowledged, or answered 503 but
    // written), and every other service's event.
    const feed = await waitFor('the feed to hold every command and event', async () => {
      const items = await wholeFeed(gateway, tenant);
      return items.length >= commandCounts.size + otherEvents.length ? items : undefined;
    }, 60_000, 500);
    const fromCommands = feed.filter((e) => e.source_service === 'core-gateway').map((e) => e.correlation_id!);
    expect(fromCommands.length, 'feed events derived from commands').to.equal(new Set(fromCommands).size);
    expect(new Set(fromCommands)).to.deep.equal(new Set(commandCounts.keys()));
    expect(feed.filter((e) => e.source_service !== 'core-gateway').map((e) => e.id).sort()).to.deep.equal(otherEvents.map((e) => e.id).sort());
    console.log(
      `      ${KILLS} kills: ${history.acknowledged.size} commands acknowledged, ${history.unavailable} answered 503, ` +
        `${commandCounts.size - history.acknowledged.size} of those written anyway; 0 blocked partitions`,
    );
  });
});
