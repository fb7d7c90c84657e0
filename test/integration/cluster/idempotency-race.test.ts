import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import type { EnrollmentAccepted, EnrollmentCommand } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { commandTopicEnvironment, commandTopicNames } from '../../support/command-topics.js';
import { hs256Token, uuid } from '../../support/factories.js';
import { startGatewayProcess, type GatewayProcess } from '../../support/gateway-process.js';
import { startInfra, type TestInfra } from '../../support/infra.js';
import { readToEnd } from '../../support/kafka-topics.js';
import { clusterGatewayEnv, clusterInfra, type ClusterInfra } from './cluster-suite.js';

const KEYS = 300;
/** Requests per key, half to each gateway, all sent at once. */
const REQUESTS_PER_KEY = 6;
/** Keys whose requests are in flight together. */
const KEYS_AT_ONCE = 10;
/** Retries per key once every first answer is in, alternating between the gateways. */
const RETRIES_PER_KEY = 2;

interface Answer {
  readonly status: number;
  readonly body: { data?: EnrollmentAccepted };
}

/**
 * Two gateway processes, each entering the cluster through a different shard, race on
 * the same Idempotency-Keys: every key's requests go to both at the same moment. With
 * KeeperMap (ZooKeeper under both servers) the claim is a compare-and-set: one command
 * per key, byte for byte, and one answer. With the MergeTree table there is no
 * compare-and-set: the command id derived from the key still makes one command id per
 * key, which consumers fold, and every answer names it. Retries sent after the answers
 * add no message in either case: the claim records Kafka's acknowledgement.
 */
describe('two gateways racing on the same Idempotency-Keys [cluster]', function () {
  this.timeout(300_000);
  let cluster: ClusterInfra;
  let infra: TestInfra;
  let kafka: Kafka;

  before(async () => {
    cluster = await clusterInfra();
    infra = await startInfra('local', { withClickHouse: false });
    kafka = new Kafka({ brokers: infra.brokers, clientId: 'idempotency-race', logLevel: logLevel.NOTHING });
  });

  after(async () => {
    await infra?.stop();
  });

  /** Idempotency-Key → the partition/offset its acknowledgement records, read from the store as the gateways wrote it. */
  async function recordedAcks(store: 'keeper-map' | 'table', database: string): Promise<Map<string, string>> {
    const query =
      store === 'keeper-map'
        ? `SELECT JSONExtractString(substring(claim, 1, length(claim) - 4), 3) AS key, record AS ack FROM idempotency_claims WHERE endsWith(claim, '#ack') FORMAT JSONEachRow`
        : `SELECT key, substring(record, 6) AS ack FROM idempotency_keys WHERE startsWith(record, '~ack:') FORMAT JSONEachRow`;
    // In the gateways' database: its Distributed table names its local tables by currentDatabase().
    const res = await fetch(`${cluster.clickhouse.url}/?database=${database}&query=${encodeURIComponent(query)}`);
    expect(res.status, 'ClickHouse answered').to.equal(200);
    const acks = new Map<string, string>();
    for (const line of (await res.text()).split('\n').filter((l) => l !== '')) {
      const row = JSON.parse(line) as { key: string; ack: string };
      const ack = JSON.parse(row.ack) as { partition: number; offset: string };
      acks.set(row.key, `${ack.partition}/${ack.offset}`);
    }
    return acks;
  }

  async function race(store: 'keeper-map' | 'table') {
    const secret = randomBytes(32).toString('hex');
    const suffix = uuid();
    const commands = commandTopicNames((topic) => `race.${topic}.${suffix}`);
    const shared = clusterGatewayEnv(cluster, {
      ROLE: 'gateway',
      LOG_LEVEL: 'warn',
      AUTH_JWT_SECRET: secret,
      KAFKA_BROKERS: infra.brokers.join(','),
      IDEMPOTENCY_STORE: store,
      ...commandTopicEnvironment(commands),
      EVENTS_TOPICS: `race.events.${suffix}`,
      EVENTS_DLQ_TOPIC: `race.dlq.${suffix}`,
    });
    const gateways: GatewayProcess[] = [];
    try {
      // One after the other: both create the database's tables at start.
      gateways.push(await startGatewayProcess(shared));
      gateways.push(await startGatewayProcess({ ...shared, CLICKHOUSE_URL: cluster.clickhouse.shards[1]!.url }));
      const orgId = uuid();
      const projectId = uuid();
      const fleetId = uuid();
      const token = await hs256Token(secret, { orgIds: [orgId] });
      const keys = Array.from({ length: KEYS }, (_, i) => ({ key: `race-${i}-${uuid()}`, deviceId: uuid() }));
      const answers = new Map<string, Answer[]>();
      const send = async (gateway: GatewayProcess, key: string, deviceId: string): Promise<Answer> => {
        const res = await fetch(`${gateway.url}${API_PREFIX}/projects/${projectId}/fleets/${fleetId}/devices/${deviceId}/enroll`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'org-id': orgId, 'idempotency-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ display_name: `device for ${key}` }),
        });
        return { status: res.status, body: (await res.json()) as Answer['body'] };
      };
      for (let start = 0; start < keys.length; start += KEYS_AT_ONCE) {
        await Promise.all(
          keys.slice(start, start + KEYS_AT_ONCE).map(async ({ key, deviceId }) => {
            const all = await Promise.all(Array.from({ length: REQUESTS_PER_KEY }, (_, i) => send(gateways[i % 2]!, key, deviceId)));
            answers.set(key, all);
          }),
        );
      }

      const topic = commands.enrollmentCommands;
      const afterRace = (await readToEnd(kafka, [topic])).length;
      // A client retrying after its answer (a timeout on its side): the command was acknowledged, so nothing more is sent.
      for (let start = 0; start < keys.length; start += KEYS_AT_ONCE) {
        await Promise.all(
          keys.slice(start, start + KEYS_AT_ONCE).map(async ({ key, deviceId }) => {
            for (let i = 0; i < RETRIES_PER_KEY; i += 1) answers.get(key)!.push(await send(gateways[i % 2]!, key, deviceId));
          }),
        );
      }
      const messages = await readToEnd(kafka, [topic]);
      expect(messages.length, 'messages the retries after acknowledgement added').to.equal(afterRace);
      const byKey = new Map<string, EnrollmentCommand[]>();
      const placesByKey = new Map<string, string[]>();
      for (const m of messages) {
        const command = JSON.parse(m.value!) as EnrollmentCommand;
        byKey.set(command.idempotency_key!, [...(byKey.get(command.idempotency_key!) ?? []), command]);
        placesByKey.set(command.idempotency_key!, [...(placesByKey.get(command.idempotency_key!) ?? []), `${m.partition}/${m.offset}`]);
      }
      // Every key's recorded acknowledgement names where one of its messages is on the topic.
      const acks = await recordedAcks(store, shared['CLICKHOUSE_DATABASE']!);
      expect(acks.size, 'keys with a recorded acknowledgement').to.equal(KEYS);
      for (const [key, place] of acks) expect(placesByKey.get(key), `where ${key} is on the topic`).to.include(place);
      expect(byKey.size, 'keys with commands on the topic').to.equal(KEYS);
      let differingAnswers = 0;
      let keysWithTwoMessages = 0;
      for (const { key } of keys) {
        const given = answers.get(key)!;
        const refused = given.find((a) => a.status !== 202);
        if (refused !== undefined) {
          const errors = gateways.flatMap((g) => g.logLines().filter((l) => l['level'] === 50).slice(-3));
          expect.fail(`a request for ${key} answered ${refused.status}: ${JSON.stringify(refused.body)}; the gateways' last errors: ${JSON.stringify(errors)}`);
        }
        const commands = byKey.get(key)!;
        const ids = new Set(commands.map((c) => c.command_id));
        expect([...ids], `command ids on the topic for ${key}`).to.have.length(1);
        expect(new Set(given.map((a) => a.body.data!.enrollment_id)), `enrollment ids answered for ${key}`).to.deep.equal(ids);
        if (new Set(given.map((a) => JSON.stringify(a.body))).size > 1) differingAnswers += 1;
        // Without a compare-and-set, two gateways that each read back only their own record both publish.
        if (commands.length > (store === 'keeper-map' ? 1 : 2)) {
          const sent = messages.filter((m) => m.value !== null && (JSON.parse(m.value) as EnrollmentCommand).idempotency_key === key);
          const warnings = gateways.flatMap((g) =>
            g
              .logLines()
              .filter((l) => Number(l['level']) >= 40)
              .slice(-5)
              .map((l) => `${String(l['time'])} ${String(l['msg'])}: ${String((l['err'] as { message?: string } | undefined)?.message ?? '')}`),
          );
          expect.fail(
            `${commands.length} messages for ${key}, written at ${sent.map((m) => m.timestamp).join(', ')} (ms); ` +
              `the gateways' last warnings: ${JSON.stringify(warnings)}`,
          );
        }
        if (commands.length > 1) keysWithTwoMessages += 1;
        if (store === 'keeper-map') {
          expect(new Set(commands.map((c) => JSON.stringify(c))).size, `distinct commands for ${key}`).to.equal(1);
          expect(new Set(given.map((a) => JSON.stringify(a.body))).size, `distinct answers for ${key}`).to.equal(1);
        }
      }
      return { messages: messages.length, differingAnswers, keysWithTwoMessages };
    } finally {
      for (const gateway of gateways) await gateway.dispose();
    }
  }

  it('publishes one message per key across the race and the retries, and gives every request the same answer, with KeeperMap under both gateways', async () => {
    const result = await race('keeper-map');
    console.log(
      `      keeper-map: ${KEYS} keys, ${KEYS * (REQUESTS_PER_KEY + RETRIES_PER_KEY)} requests, ${result.messages} messages, ${result.differingAnswers} keys with differing answers`,
    );
  });

  it('publishes one command id per key, nothing for a retry after the acknowledgement, and answers it to every request, with the MergeTree table (no compare-and-set)', async () => {
    const result = await race('table');
    console.log(
      `      table: ${KEYS} keys, ${KEYS * (REQUESTS_PER_KEY + RETRIES_PER_KEY)} requests, ${result.messages} messages, ` +
        `${result.keysWithTwoMessages} keys with two messages, ${result.differingAnswers} keys with differing answers`,
    );
  });
});
