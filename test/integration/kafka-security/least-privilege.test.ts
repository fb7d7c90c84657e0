import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { uuid } from '../../support/factories.js';
import { startGatewayProcess, type GatewayProcess } from '../../support/gateway-process.js';
import { committedToEnd, createTopics as createKafkaTopics, topicEnds } from '../../support/kafka-topics.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { consumerGrants, createGrants, gatewayGrants, grant, type Deployment } from './acls.js';
import { deployment, enroll, inFeed, readyz, remoteGateway } from './helpers.js';
import { secureBroker, secureKafkaEnv, sharedClickHouse, type User } from './secure-broker.js';
import { commandTopicList } from '../../support/command-topics.js';

const PREFIX = 'acl.';
const AUTH_JWT_SECRET = randomBytes(32).toString('hex');

async function createTopics(d: Deployment): Promise<void> {
  await createKafkaTopics(secureBroker().admin, [d.events, ...commandTopicList(d.commands), d.deadLetter].map((topic) => ({ topic, numPartitions: 1 })));
}

/** A plain kafkajs client logged in as `user`, for trying what its ACLs do not allow. */
function clientOf(user: User): Kafka {
  const b = secureBroker();
  return new Kafka({
    clientId: `least-privilege-${user}`,
    brokers: [b.bootstrap],
    ssl: { ca: [readFileSync(b.caFile, 'utf8')], cert: readFileSync(b.clientCertFile, 'utf8'), key: readFileSync(b.clientKeyFile, 'utf8') },
    sasl: { mechanism: 'scram-sha-512', username: user, password: b.password(user) },
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  });
}

/** The error type kafkajs reports for `attempt`, or "none" when it succeeds. */
async function refusalOf(attempt: () => Promise<unknown>): Promise<string> {
  try {
    await attempt();
    return 'none';
  } catch (error) {
    for (let e: unknown = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) {
      const type = (e as { type?: unknown }).type;
      if (typeof type === 'string') return type;
      if (e === (e as { cause?: unknown }).cause) break;
    }
    return (error as Error).name;
  }
}

describe('least privilege: each role runs with exactly the ACLs docs/kafka-contract.md lists', function () {
  this.timeout(180_000);
  const d = deployment(PREFIX);
  const processes: GatewayProcess[] = [];
  const gateways: TestGateway[] = [];

  before(async () => {
    await createTopics(d);
    await grant(secureBroker().admin, 'gateway', gatewayGrants(d));
    await grant(secureBroker().admin, 'consumer', consumerGrants(d));
  });
  // chDB serves one gateway per test process at a time.
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.close()));
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.dispose()));
  });

  it('ROLE=gateway and ROLE=consumer with KAFKA_CREATE_TOPICS=false: commands reach the feed, a bad event the dead-letter topic', async () => {
    const clickhouse = await sharedClickHouse();
    const common = {
      ...d.env,
      KAFKA_CREATE_TOPICS: 'false',
      CLICKHOUSE_URL: clickhouse.url,
      CLICKHOUSE_DATABASE: `acl_${randomBytes(5).toString('hex')}`,
      CURSOR_SECRET: randomBytes(32).toString('hex'),
      AUTH_JWT_SECRET,
    };
    const consumerProcess = await startGatewayProcess({ ...secureKafkaEnv('consumer'), ...common, ROLE: 'consumer' });
    processes.push(consumerProcess);
    // The limit of the topic it writes is read under its grants; those of the topics it reads it may not ask for, which costs no warning.
    const lines = await waitFor('the consumer to log the limits it read', async () => {
      const logged = consumerProcess.logLines();
      return logged.some((line) => line['msg'] === 'ingest consumer running') ? logged : undefined;
    });
    const limits = lines.find((line) => line['msg'] === 'largest record batch each topic accepts' && d.deadLetter in ((line['maxMessageBytes'] as Record<string, number> | undefined) ?? {}));
    expect(limits, "the dead-letter topic's limit read").to.not.equal(undefined);
    const refused = lines.filter((line) => line['msg'] === "could not read the topics' max.message.bytes; assuming Kafka's default");
    expect(refused.map((line) => [line['level'], line['topics']])).to.deep.equal([[30, [d.events, ...commandTopicList(d.commands)]]]);
    const gatewayProcess = await startGatewayProcess({ ...secureKafkaEnv('gateway'), ...common, ROLE: 'gateway' });
    processes.push(gatewayProcess);
    const gateway = remoteGateway(gatewayProcess.url, AUTH_JWT_SECRET);
    const tenant = gateway.tenant();

    const { res, deviceId } = await enroll(gateway, tenant);
    expect(res.status, res.text).to.equal(202);
    const policy = await gateway.call('PATCH', `/projects/${tenant.projectId}/fleets/${uuid()}/edge/policy`, {
      headers: await tenant.headers(),
      body: { telemetry: { interval_s: 30 } },
    });
    expect(policy.status, policy.text).to.equal(200);
    await inFeed(gateway, tenant, deviceId);
    const { admin } = secureBroker();
    await waitFor('the ingest group committed the enrollment', () => committedToEnd(admin, d.group, d.commands.enrollmentCommands));

    const producer = admin.producer();
    await producer.connect();
    try {
      await producer.send({ topic: d.events, acks: -1, messages: [{ key: 'x', value: 'not json' }] });
    } finally {
      await producer.disconnect();
    }
    await waitFor('the bad event on the dead-letter topic', async () => {
      const ends = await topicEnds(admin, d.deadLetter);
      return [...ends.values()].some((end) => end > 0n) ? true : undefined;
    });
  });

  it('allows nothing beyond: the gateway user cannot read or write events, the consumer user cannot write commands', async () => {
    const asGateway = clientOf('gateway');
    const asConsumer = clientOf('consumer');
    const send = (kafka: Kafka, topic: string) => async () => {
      const producer = kafka.producer({ retry: { retries: 0 } });
      await producer.connect();
      try {
        await producer.send({ topic, acks: -1, messages: [{ value: '{}' }] });
      } finally {
        await producer.disconnect();
      }
    };
    const fetchEvents = async () => {
      const admin = asGateway.admin();
      await admin.connect();
      try {
        await admin.fetchTopicOffsets(d.events);
      } finally {
        await admin.disconnect();
      }
    };
    expect(await refusalOf(send(asGateway, d.events))).to.equal('TOPIC_AUTHORIZATION_FAILED');
    expect(await refusalOf(send(asGateway, d.deadLetter))).to.equal('TOPIC_AUTHORIZATION_FAILED');
    expect(await refusalOf(fetchEvents)).to.match(/AUTHORIZATION_FAILED|UNKNOWN_TOPIC_OR_PARTITION/);
    expect(await refusalOf(send(asConsumer, d.commands.enrollmentCommands))).to.equal('TOPIC_AUTHORIZATION_FAILED');
  });

  it('ROLE=all with KAFKA_CREATE_TOPICS=true takes the union plus CREATE on its topics, and creates them', async () => {
    const own = deployment(PREFIX);
    const topics = [own.events, ...commandTopicList(own.commands), own.deadLetter];
    await grant(secureBroker().admin, 'all', [...gatewayGrants(own), ...consumerGrants(own), ...createGrants(topics)]);
    const gateway = await startTestGateway({ ...secureKafkaEnv('all'), ...own.env });
    gateways.push(gateway);
    expect((await readyz(gateway.runtime.url)).status).to.equal(200);
    const admin = secureBroker().admin.admin();
    await admin.connect();
    try {
      expect(await admin.listTopics()).to.include.members(topics);
    } finally {
      await admin.disconnect();
    }
    const tenant = gateway.tenant();
    const { res, deviceId } = await enroll(gateway, tenant);
    expect(res.status, res.text).to.equal(202);
    await inFeed(gateway, tenant, deviceId);
  });

  it('without its ACLs a process does not start, and says which refusal stopped it', async () => {
    const own = deployment(PREFIX);
    const refused = await startTestGateway({ ...secureKafkaEnv('all'), ...own.env }).then(
      (g) => {
        gateways.push(g);
        return undefined;
      },
      (error: unknown) => error as Error,
    );
    expect(refused?.name).to.equal('StartupError');
    expect(refused?.message).to.equal(
      "Kafka: not authorized: the brokers refused access to a topic (TOPIC_AUTHORIZATION_FAILED); check this user's ACLs (docs/kafka-contract.md)",
    );
    const missing = await startTestGateway({ ...secureKafkaEnv('all'), ...own.env, KAFKA_CREATE_TOPICS: 'false' }).then(
      (g) => {
        gateways.push(g);
        return undefined;
      },
      (error: unknown) => error as Error,
    );
    expect(missing?.message).to.match(/^Kafka: topic\(s\) .* not found; with KAFKA_CREATE_TOPICS=false/);
  });
});
