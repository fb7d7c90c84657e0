import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { EnrollmentAccepted, EdgePolicyAccepted } from '../../../src/generated/schema-types.js';
import { REJECT_REASONS } from '../../../src/ingest/event-ingestor.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { messageCheck, type AsyncApiContract, type MessageCheck } from '../../support/asyncapi-messages.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import type { ReceivedMessage } from '../../support/kafka-topics.js';
import { describeOnEachStore, topicReader, type KafkaSuite, type TopicReader } from './kafka-suite.js';
import { commandTopicList } from '../../support/command-topics.js';
import { catalogue } from '../../../src/commands/catalogue.js';

const checkedIn = JSON.parse(readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'docs', 'asyncapi.json'), 'utf8')) as AsyncApiContract;
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/**
 * The suite's topics are the default names with a suffix of the run; the document's
 * channel for one is the channel at its default name.
 */
function messageOf(check: MessageCheck, suite: KafkaSuite, topic: string): string {
  const defaults: Record<string, string> = {
    [suite.topics.events]: 'platform.events',
    ...Object.fromEntries(catalogue.map(({ topic }) => [suite.topics.commands[topic.configKey], topic.default])),
    [suite.topics.deadLetter]: 'platform.events.dlq',
  };
  const names = check.messagesOf(defaults[topic]!);
  expect(names, topic).to.have.length(1);
  return names[0]!;
}

function expectAsDocumented(check: MessageCheck, suite: KafkaSuite, message: ReceivedMessage): void {
  const problems = check.problems(messageOf(check, suite, message.topic), message);
  expect(problems, `${message.topic} ${JSON.stringify(message.headers)}`).to.deep.equal([]);
}

describeOnEachStore('what the gateway writes to Kafka is what its AsyncAPI document says', function (suite) {
  this.timeout(120_000);
  let check: MessageCheck;
  let reader: TopicReader | undefined;

  const fetchDocument = () => request<AsyncApiContract>('GET', `${suite().gateway.baseUrl}/asyncapi.json`);

  before(async () => {
    const { topics } = suite();
    // Messages are checked against the document the gateway serves.
    check = messageCheck((await fetchDocument()).body);
    reader = await topicReader([...commandTopicList(topics.commands), topics.deadLetter]);
  });
  after(() => reader?.stop());

  it('serves the checked-in document at /asyncapi.json without credentials', async () => {
    const res = await fetchDocument();
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.body).to.deep.equal(checkedIn);
  });

  it('publishes commands whose keys, headers and values validate against the document', async () => {
    const s = suite();
    const { gateway, topics } = s;
    const tenant = gateway.tenant();
    const headers = await tenant.headers();
    const enroll = (extra: Record<string, string>) =>
      gateway.call<{ data: EnrollmentAccepted }>('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`, {
        headers: { ...headers, ...extra },
        body: { display_name: 'Pump 7', enrollment_type: 'factory', external_id: 'ext-7', meta: { rack: 3 } },
      });
    const patch = (extra: Record<string, string>) =>
      gateway.call<{ data: EdgePolicyAccepted }>('PATCH', `/projects/${tenant.projectId}/fleets/${uuid()}/edge/policy`, {
        headers: { ...headers, ...extra },
        body: { sync: { every_s: 30 }, drop: null },
      });
    // Every optional header once present and once absent.
    const enrollments = [await enroll({ 'idempotency-key': `asyncapi-${uuid()}`, traceparent: TRACEPARENT }), await enroll({})];
    const patches = [await patch({ traceparent: TRACEPARENT }), await patch({})];
    expect([...enrollments, ...patches].map((r) => r.status)).to.deep.equal([202, 202, 200, 200]);

    const ids = new Set([...enrollments.map((r) => r.body.data.enrollment_id), ...patches.map((r) => r.body.data.command_id)]);
    const commandId = (m: ReceivedMessage) => (JSON.parse(m.value ?? '{}') as { command_id?: string }).command_id ?? '';
    const commands = await reader!.waitFor('the four commands', (m) => m.topic !== topics.deadLetter && ids.has(commandId(m)), 4);
    for (const command of commands) expectAsDocumented(check, s, command);

    const byId = new Map(commands.map((m) => [commandId(m), m]));
    const first = byId.get(enrollments[0]!.body.data.enrollment_id)!;
    expect(first.topic).to.equal(topics.commands.enrollmentCommands);
    expect(first.headers).to.include({ traceparent: TRACEPARENT, 'request-id': enrollments[0]!.headers.get('x-request-id') });
    expect(first.headers).to.have.property('idempotency-key');
    expect(byId.get(enrollments[1]!.body.data.enrollment_id)!.headers).to.not.have.any.keys('traceparent', 'idempotency-key');
    expect(byId.get(patches[0]!.body.data.command_id)!.topic).to.equal(topics.commands.edgePolicyCommands);
    expect(byId.get(patches[1]!.body.data.command_id)!.headers).to.not.have.property('traceparent');
  });

  describe('dead letters', () => {
    const marker = `asyncapi-${randomBytes(6).toString('hex')}`;
    const constraint = `asyncapi_${randomBytes(4).toString('hex')}`;
    let sql: SqlTransport;

    // The one reason validation cannot give: a valid event the real store refuses, here by a constraint on one entity value.
    before(async () => {
      sql = await openStore(suite().gateway.config);
      await sql.command(`ALTER TABLE events ADD CONSTRAINT ${constraint} CHECK entity != '${marker}'`);
    });
    after(async () => {
      await sql.command(`ALTER TABLE events DROP CONSTRAINT IF EXISTS ${constraint}`);
      await sql.close();
    });

    it('are written, for every reason and from every topic read, as the document says', async () => {
      const s = suite();
      const { kafka, topics, gateway } = s;
      const tenant = gateway.tenant();
      const base = { org_id: tenant.orgId, project_id: tenant.projectId };
      const origin = { 'test-run': marker };
      // Enough fields no event has to make the detail longer than the header may be.
      const unknown = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`not_a_field_of_events_${i}`, i]));
      const producer = kafka.producer();
      await producer.connect();
      try {
        await producer.send({
          topic: topics.events,
          acks: -1,
          messages: [
            { key: null, value: null, headers: origin },
            { key: marker, value: 'not json', headers: origin },
            { key: marker, value: JSON.stringify({ ...canonicalEvent(base), ...unknown }), headers: origin },
            { key: marker, value: JSON.stringify({ ...canonicalEvent(base), occurred_at: '1800-01-01T00:00:00Z' }), headers: origin },
            { key: marker, value: JSON.stringify({ ...canonicalEvent(base), entity: marker }), headers: origin },
            { key: marker, value: JSON.stringify({ ...canonicalEvent(base), payload: { deep: JSON.parse('['.repeat(40) + ']'.repeat(40)) as unknown } }), headers: origin },
          ],
        });
        // Only the gateway writes commands; anything else there is dead-lettered.
        await producer.send({ topic: topics.commands.enrollmentCommands, acks: -1, messages: [{ key: uuid(), value: JSON.stringify({ command_id: uuid() }), headers: origin }] });
      } finally {
        await producer.disconnect();
      }

      const letters = await reader!.waitFor('seven dead letters', (m) => m.topic === topics.deadLetter && m.headers['test-run'] === marker, 7, 60_000);
      for (const letter of letters) expectAsDocumented(check, s, letter);
      expect(new Set(letters.map((m) => m.headers['dlq-reason']))).to.deep.equal(new Set(REJECT_REASONS));
      expect(new Set(letters.map((m) => m.headers['dlq-source-topic']))).to.deep.equal(new Set([topics.events, topics.commands.enrollmentCommands]));
      expect(letters.find((m) => m.headers['dlq-reason'] === 'empty-value')!.key).to.equal(null);
      expect(Math.max(...letters.map((m) => m.headers['dlq-detail']!.length))).to.equal(1000);

      // And the check is real: a dead letter without its reason is not one.
      const { 'dlq-reason': _dropped, ...withoutReason } = letters[0]!.headers;
      expect(check.problems('DeadLetter', { ...letters[0]!, headers: withoutReason })).to.have.length(1);
    });
  });
});
