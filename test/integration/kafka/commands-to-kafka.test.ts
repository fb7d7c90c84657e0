import { expect } from 'chai';
import { edgePolicy } from '../../../src/commands/catalogue/edge-policy.js';
import { enrollment } from '../../../src/commands/catalogue/enrollment.js';
import { COMMAND_BODY_MAX_DEPTH } from '../../../src/commands/command-entry.js';
import { commandEvent, type GatewayCommand } from '../../../src/commands/command-event.js';
import type { CanonicalEvent, CanonicalEventPageResponse, EdgePolicyAccepted, EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { fromStoreTimestamp, toStoreTimestamp } from '../../../src/store/timestamps.js';
import { deepestCommandBody, uuid } from '../../support/factories.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import type { Kafka } from 'kafkajs';
import { waitFor } from '../../support/wait-for.js';
import { topicEnds } from '../../support/kafka-topics.js';
import { describeOnEachStore, topicReader, type TopicReader } from './kafka-suite.js';
import { commandTopicList } from '../../support/command-topics.js';

const schemas = createSchemaRegistry();
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

async function feedEvents(gateway: TestGateway, tenant: Tenant, query: string): Promise<CanonicalEvent[]> {
  return waitFor('the command in the feed', async () => {
    const feed = await gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, {
      headers: await tenant.headers(),
    });
    return feed.body.data.items.length > 0 ? feed.body.data.items : undefined;
  });
}

/** The event as the feed shows it: occurred_at with microseconds, in UTC. */
const asFeedShows = (event: CanonicalEvent): CanonicalEvent => ({ ...event, occurred_at: fromStoreTimestamp(toStoreTimestamp(event.occurred_at)) });

/** Sum of the high watermarks of a topic's partitions. */
const messagesOn = async (kafka: Kafka, topic: string): Promise<bigint> => [...(await topicEnds(kafka, topic)).values()].reduce((sum, end) => sum + end, 0n);

describeOnEachStore('commands published to Kafka', function (suite) {
  this.timeout(60_000);
  let reader: TopicReader;

  before(async () => {
    const { topics } = suite();
    reader = await topicReader(commandTopicList(topics.commands));
  });
  after(() => reader.stop());

  it('puts an enrollment on its topic, keyed by device_id, and the feed shows the event derived from it once', async () => {
    const { gateway, topics } = suite();
    const tenant = gateway.tenant();
    const fleetId = uuid();
    const deviceId = uuid();
    const eventsBefore = await messagesOn(suite().kafka, topics.events);
    const res = await gateway.call<{ data: EnrollmentAccepted }>('POST', `/projects/${tenant.projectId}/fleets/${fleetId}/devices/${deviceId}/enroll`, {
      headers: { ...(await tenant.headers({ sub: 'operator-1' })), 'idempotency-key': 'enroll-1', traceparent: TRACEPARENT },
      body: { display_name: 'Pump', enrollment_type: 'factory' },
    });
    expect(res.status).to.equal(202);
    const enrollmentId = res.body.data.enrollment_id;

    const [command] = await reader.waitFor('enrollment command', (m) => m.topic === topics.commands.enrollmentCommands && m.value?.includes(enrollmentId) === true);
    expect(command!.key).to.equal(deviceId);
    expect(command!.headers).to.deep.equal({
      'content-type': 'application/json',
      schema: 'enrollment-command.schema.json',
      'schema-version': '1',
      'idempotency-key': 'enroll-1',
      'request-id': res.headers.get('x-request-id'),
      traceparent: TRACEPARENT,
    });
    const value = JSON.parse(command!.value!) as GatewayCommand;
    expect(schemas.check('enrollment-command.schema.json', value).ok).to.equal(true);
    expect(value).to.deep.include({
      command_id: enrollmentId,
      org_id: tenant.orgId,
      project_id: tenant.projectId,
      fleet_id: fleetId,
      device_id: deviceId,
      requested_by: 'operator-1',
      requested_at: res.body.data.queued_at,
      body: { display_name: 'Pump', enrollment_type: 'factory' },
    });

    const items = await feedEvents(gateway, tenant, `?device_id=${deviceId}`);
    expect(items).to.deep.equal([asFeedShows(commandEvent(value, TRACEPARENT))]);
    expect(items[0]).to.deep.include({ correlation_id: enrollmentId, trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: 'b7ad6b7169203331' });
    expect(await messagesOn(suite().kafka, topics.events), 'the gateway writes nothing to the events topic').to.equal(eventsBefore);
  });

  it('puts an edge-policy patch on its topic, keyed by fleet_id, and the feed shows its event', async () => {
    const { gateway, topics } = suite();
    const tenant = gateway.tenant();
    const fleetId = uuid();
    const patch = { sync: { every_s: 60 }, drop: null };
    const res = await gateway.call<{ data: EdgePolicyAccepted }>('PATCH', `/projects/${tenant.projectId}/fleets/${fleetId}/edge/policy`, {
      headers: await tenant.headers(),
      body: patch,
    });
    expect(res.status).to.equal(200);
    const commandId = res.body.data.command_id;

    const [command] = await reader.waitFor('edge-policy command', (m) => m.topic === topics.commands.edgePolicyCommands && m.value?.includes(commandId) === true);
    expect(command!.key).to.equal(fleetId);
    const value = JSON.parse(command!.value!) as GatewayCommand;
    expect(schemas.check('edge-policy-command.schema.json', value).ok).to.equal(true);
    expect(value).to.deep.include({ command_id: commandId, fleet_id: fleetId, patch, type: 'edge-policy.merge-patch' });

    const items = await feedEvents(gateway, tenant, `?fleet_id=${fleetId}`);
    expect(items).to.deep.equal([asFeedShows(commandEvent(value, undefined))]);
    expect(items[0]).to.deep.include({ domain: 'edge', entity: 'policy', action: 'update_queued', fleet_id: fleetId });
  });

  // A body the route took at 32 levels became a 33-level message, which the consumer dead-lettered: answered 2xx, never on the feed.
  it('shows on the feed the event of the deepest body a command route takes, on either command', async () => {
    const { gateway } = suite();
    const tenant = gateway.tenant();
    const fleetId = uuid();
    const deviceId = uuid();
    const headers = await tenant.headers();
    const patch = await gateway.call('PATCH', `/projects/${tenant.projectId}/fleets/${fleetId}/edge/policy`, { headers, body: deepestCommandBody(edgePolicy, COMMAND_BODY_MAX_DEPTH) });
    expect(patch.status).to.equal(200);
    const enroll = await gateway.call('POST', `/projects/${tenant.projectId}/fleets/${fleetId}/devices/${deviceId}/enroll`, {
      headers,
      body: deepestCommandBody(enrollment, COMMAND_BODY_MAX_DEPTH),
    });
    expect(enroll.status).to.equal(202);
    const items = await waitFor('both events on the feed', async () => {
      const found = await feedEvents(gateway, tenant, `?fleet_id=${fleetId}`);
      return found.length === 2 ? found : undefined;
    });
    expect(items.map((e) => e.action).sort()).to.deep.equal(['queued', 'update_queued']);
  });

  it('keeps the commands of one device in order on one partition', async () => {
    const { gateway, topics } = suite();
    const tenant = gateway.tenant();
    const headers = await tenant.headers();
    const deviceId = uuid();
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await gateway.call<{ data: EnrollmentAccepted }>('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${deviceId}/enroll`, { headers, body: { external_id: String(i) } });
      ids.push(res.body.data.enrollment_id);
    }
    const commands = await reader.waitFor('five commands of one device', (m) => m.topic === topics.commands.enrollmentCommands && m.key === deviceId, 5);
    expect(new Set(commands.map((c) => c.partition)).size).to.equal(1);
    expect(commands.map((c) => (JSON.parse(c.value!) as { command_id: string }).command_id)).to.deep.equal(ids);
  });

  it('puts one command on the topic for requests with one Idempotency-Key that arrive together', async () => {
    const { gateway, topics } = suite();
    const tenant = gateway.tenant();
    const headers = await tenant.headers();
    const deviceId = uuid();
    const path = `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${deviceId}/enroll`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        gateway.call<{ data: EnrollmentAccepted }>('POST', path, { headers: { ...headers, 'idempotency-key': 'same-moment' }, body: { display_name: 'Pump' } }),
      ),
    );
    expect(answers.map((a) => a.status)).to.deep.equal(Array(8).fill(202));
    expect(new Set(answers.map((a) => a.body.data.enrollment_id)).size).to.equal(1);

    // One device's commands share a partition in order: once a later command is read, every earlier one has been.
    const later = await gateway.call<{ data: EnrollmentAccepted }>('POST', path, { headers, body: { display_name: 'Later' } });
    await reader.waitFor('the later command', (m) => m.topic === topics.commands.enrollmentCommands && m.value?.includes(later.body.data.enrollment_id) === true);
    const keyed = reader.messages.filter((m) => m.topic === topics.commands.enrollmentCommands && m.key === deviceId && m.headers['idempotency-key'] === 'same-moment');
    // Requests that overlap share one flight and one send. One that arrives after the flight
    // ended is a retry, and a retry republishes the recorded command, a copy with the same
    // command_id that consumers and the feed fold (docs/decisions/idempotency.md): so the
    // number of copies depends on timing, and one command is one command_id.
    const commandIds = new Set(keyed.map((m) => (JSON.parse(m.value!) as { command_id: string }).command_id));
    expect([...commandIds]).to.deep.equal([answers[0]!.body.data.enrollment_id]);
  });
});
