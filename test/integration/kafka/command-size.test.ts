import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { ConfigResourceTypes } from 'kafkajs';
import type { EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { BODY_LIMIT_BYTES } from '../../../src/http/json-body.js';
import { hs256Token, uuid } from '../../support/factories.js';
import { startGatewayProcess } from '../../support/gateway-process.js';
import { request } from '../../support/http-client.js';
import { createTopics, readToEnd } from '../../support/kafka-topics.js';
import { describeOnEachStore, sharedKafka } from './kafka-suite.js';
import { commandTopicEnvironment, commandTopicList, commandTopicNames } from '../../support/command-topics.js';

/** An enrollment body of about `bytes` bytes of JSON, all of it legal. */
const largeBody = (bytes: number) => ({ display_name: 'Pump', enrollment_type: 'factory', meta: { notes: 'n'.repeat(bytes - 100) } });

describeOnEachStore('commands near the size limits', function (suite) {
  this.timeout(120_000);

  it('acknowledges a burst of large legal enrollments of one device, each one on its topic', async () => {
    const { gateway, topics, kafka } = suite();
    const tenant = gateway.tenant();
    const fleetId = uuid();
    const deviceId = uuid();
    const headers = await tenant.headers();
    // 60 bodies of about 60 KB on one key: one lane, whose sends together would be 3.6 MB.
    const body = largeBody(60_000);
    expect(Buffer.byteLength(JSON.stringify(body))).to.be.below(BODY_LIMIT_BYTES);
    const answers = await Promise.all(
      Array.from({ length: 60 }, () =>
        gateway.call<{ data: EnrollmentAccepted }>('POST', `/projects/${tenant.projectId}/fleets/${fleetId}/devices/${deviceId}/enroll`, { headers, body }),
      ),
    );
    expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 202));
    const ids = new Set(answers.map((a) => a.body.data.enrollment_id));
    const onTopic = (await readToEnd(kafka, [topics.commands.enrollmentCommands])).filter((m) => m.key === deviceId);
    expect(new Set(onTopic.map((m) => (JSON.parse(m.value!) as { command_id: string }).command_id))).to.deep.equal(ids);
    expect(onTopic).to.have.length(60);
  });
});

describe('a command larger than its topic accepts', function () {
  this.timeout(120_000);

  it('is refused at the door with a 413 in the envelope, while smaller commands still go out', async () => {
    const { kafka, infra } = sharedKafka();
    const run = randomBytes(4).toString('hex');
    const commands = commandTopicNames((name) => `${name}.small.${run}`);
    const enrollments = commands.enrollmentCommands;
    // The operator's topics take batches of at most 16 KiB, a quarter of the HTTP body limit.
    await createTopics(kafka, commandTopicList(commands).map((topic) => ({ topic, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '16384' }] })));
    const admin = kafka.admin();
    await admin.connect();
    const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: enrollments, configNames: ['max.message.bytes'] }] });
    await admin.disconnect();
    expect(resources[0]!.configEntries[0]!.configValue).to.equal('16384');

    const secret = randomBytes(32).toString('hex');
    // ROLE=all on chDB in a data directory of its own: a process of its own, so it shares no engine with the suite's gateway.
    const gateway = await startGatewayProcess({
      AUTH_JWT_SECRET: secret,
      KAFKA_BROKERS: infra.brokers.join(','),
      ...commandTopicEnvironment(commands),
      EVENTS_TOPICS: `platform.events.small.${run}`,
      EVENTS_DLQ_TOPIC: `platform.events.dlq.small.${run}`,
      KAFKA_CONSUMER_GROUP: `core-gateway-ingest-small-${run}`,
    });
    try {
      const orgId = uuid();
      const headers = { authorization: `Bearer ${await hs256Token(secret, { orgIds: [orgId] })}`, 'org-id': orgId };
      const path = `${gateway.url}${API_PREFIX}/projects/${uuid()}/fleets/${uuid()}/devices/${uuid()}/enroll`;
      const tooLarge = await request('POST', path, { headers, body: largeBody(20_000) });
      expect(tooLarge.status).to.equal(413);
      expect(tooLarge.body).to.deep.include({ ok: 0 });
      expect(String((tooLarge.body as { detail: string }).detail)).to.match(/more than its Kafka topic accepts/);
      const small = await request('POST', path, { headers, body: largeBody(5_000) });
      expect(small.status).to.equal(202);
      const onTopic = await readToEnd(kafka, [enrollments]);
      expect(onTopic).to.have.length(1);
    } finally {
      await gateway.dispose();
    }
  });
});
