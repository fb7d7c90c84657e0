import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import type { EnrollmentCommand } from '../../../src/generated/schema-types.js';
import { uuid } from '../../support/factories.js';
import { createStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait-for.js';
import { committedToEnd, produceContinuously, readToEnd } from '../../support/kafka-topics.js';
import { enroll, firstPage, newTenant, wholeFeed, type Tenant } from './stack-helpers.js';

// The stack scripts bound their own waits (broker 90 s, ClickHouse 60 s, processes 90 s);
// the hook outlasts them so that stop() never races a start still under way.
const STACK_START_BUDGET_MS = 300_000;

describe('the production shape: two gateways, a consumer, a broker and ClickHouse as separate processes', function () {
  let stack: Stack | undefined;
  let kafka: Kafka | undefined;

  const running = (): { stack: Stack; kafka: Kafka } => {
    if (stack === undefined || kafka === undefined) throw new Error('the stack did not start');
    return { stack, kafka };
  };

  before(async function () {
    this.timeout(STACK_START_BUDGET_MS);
    stack = await createStack();
    await stack.start();
    kafka = new Kafka({ clientId: 'stack-test', brokers: [...stack.brokers], logLevel: logLevel.NOTHING });
  });

  after(async function () {
    this.timeout(120_000);
    await stack?.stop();
  });

  const enrollmentIn = async (baseUrl: string, tenant: Tenant, enrollmentId: string) => {
    const items = await firstPage(baseUrl, tenant);
    return items.find((e) => e.correlation_id === enrollmentId);
  };

  it('serves in gateway B the enrollment that gateway A accepted', async () => {
    const { stack } = running();
    const [gatewayA, gatewayB] = stack.gatewayUrls;
    const tenant = await newTenant(stack.secret);

    const answer = await enroll(gatewayA, tenant);
    expect(answer.status, answer.text).to.equal(202);
    const enrollmentId = answer.body.data.enrollment_id;

    const event = await waitFor('the enrollment in the feed of gateway B', () => enrollmentIn(gatewayB, tenant, enrollmentId));
    expect(event).to.include({ domain: 'devices', entity: 'enrollment', action: 'queued', device_id: tenant.deviceId });
    expect(event.payload).to.deep.include({ enrollment_id: enrollmentId, display_name: 'Pump 7' });
  });

  it('follows one enrollment by its request id from the gateway\'s access line to the consumer\'s insert, with no token or payload in any log', async () => {
    const { stack } = running();
    const tenant = await newTenant(stack.secret);
    const requestId = `follow-${uuid()}`;
    const traceId = randomBytes(16).toString('hex');
    const displayName = `Pump ${uuid()}`;

    const answer = await enroll(stack.gatewayUrls[0], tenant, {
      body: { display_name: displayName },
      headers: { 'x-request-id': requestId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(answer.status, answer.text).to.equal(202);
    expect(answer.headers.get('x-request-id')).to.equal(requestId);
    const enrollmentId = answer.body.data.enrollment_id;

    const stored = await waitFor('the consumer\'s line for the request', async () =>
      stack.logLines('consumer').find((line) => line.requestId === requestId && line.msg === 'command event stored'),
    );
    expect(stored).to.include({ topic: stack.topics.commands.enrollmentCommands });
    // Log lines are written in batches (src/observability/logger.ts): wait for the gateway's as for the consumer's.
    const access = await waitFor('the gateway\'s access line for the request', async () =>
      stack.logLines('gateway-1').find((line) => line.requestId === requestId && line.msg === 'request'),
    );
    expect(access).to.include({ status: 202, commandId: enrollmentId, traceId, orgId: tenant.orgId });

    const token = tenant.headers.authorization!.replace('Bearer ', '');
    for (const node of ['gateway-1', 'gateway-2', 'consumer'] as const) {
      const text = stack.logText(node);
      expect(text, `${node}'s log`).not.to.include(token);
      expect(text, `${node}'s log`).not.to.include(displayName);
    }
  });

  it('answers an Idempotency-Key retry on gateway B as gateway A answered, and the feed shows the enrollment once', async () => {
    const { stack, kafka } = running();
    const [gatewayA, gatewayB] = stack.gatewayUrls;
    const tenant = await newTenant(stack.secret);
    const key = uuid();

    const first = await enroll(gatewayA, tenant, { idempotencyKey: key });
    expect(first.status, first.text).to.equal(202);
    const retry = await enroll(gatewayB, tenant, { idempotencyKey: key });
    expect(retry.status, retry.text).to.equal(202);
    expect(retry.body.data.enrollment_id).to.equal(first.body.data.enrollment_id);
    expect(retry.body.data.queued_at).to.equal(first.body.data.queued_at);
    expect(retry.body).to.deep.equal(first.body);

    // The first publish was acknowledged, so the retry answers from its record and sends nothing (docs/decisions/idempotency.md).
    const enrollmentId = first.body.data.enrollment_id;
    const copies = (await readToEnd(kafka, [stack.topics.commands.enrollmentCommands])).filter(
      (m) => (JSON.parse(m.value!) as EnrollmentCommand).command_id === enrollmentId,
    );
    expect(copies, 'copies of the command on its topic').to.have.length(1);
    await waitFor('the consumer past the command', () => committedToEnd(kafka, stack.consumerGroup, stack.topics.commands.enrollmentCommands), 30_000, 250);

    const feed = await wholeFeed(stack, tenant);
    expect(feed.map((e) => e.correlation_id)).to.deep.equal([enrollmentId]);
  });

  it('holds every produced event exactly once after the consumer is SIGKILLed and restarted mid-stream', async function () {
    this.timeout(180_000);
    const { stack, kafka } = running();
    const tenant = await newTenant(stack.secret);
    const producer = kafka.producer();
    await producer.connect();
    const events = produceContinuously(producer, stack.topics.events, { org_id: tenant.orgId, project_id: tenant.projectId });
    const producedAtLeast = (count: number) => async () => {
      events.check();
      return events.produced.length >= count ? true : undefined;
    };
    try {
      await waitFor('the consumer storing the stream', async () => {
        events.check();
        return (await firstPage(stack.gatewayUrls[0], tenant)).length >= 100 ? true : undefined;
      }, 30_000);
      await stack.killConsumer();
      await waitFor('events produced while the consumer is down', producedAtLeast(events.produced.length + 200));
      await stack.restartConsumer();
      await waitFor('events produced after the restart', producedAtLeast(events.produced.length + 200));
    } finally {
      await events.stop().finally(() => producer.disconnect());
    }
    await waitFor('the consumer past every event', () => committedToEnd(kafka, stack.consumerGroup, stack.topics.events), 60_000, 250);

    const produced = new Set(events.produced);
    // The gateways keep polled first pages (the default), which show the consumer's writes
    // within STREAM_SETTLE_MS + 2 × STREAM_POLL_MS of its commit, not at once.
    const ids = await waitFor('every produced event in the feed', async () => {
      const read = (await wholeFeed(stack, tenant)).map((e) => e.id);
      const inFeed = new Set(read);
      return [...produced].every((id) => inFeed.has(id)) ? read : undefined;
    }, 30_000, 250);
    expect(produced.size, 'distinct ids produced').to.equal(events.produced.length);
    expect(ids.length - new Set(ids).size, 'ids that appear more than once across the pages').to.equal(0);
    const inFeed = new Set(ids);
    const missing = [...produced].filter((id) => !inFeed.has(id));
    const foreign = ids.filter((id) => !produced.has(id));
    expect(missing, 'produced but not in the feed').to.deep.equal([]);
    expect(foreign, 'in the feed but never produced').to.deep.equal([]);
  });
});
