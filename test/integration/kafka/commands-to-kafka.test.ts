import { expect } from 'chai';
import type { CanonicalEventPageResponse, EdgePolicyAccepted, EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { uuid } from '../../support/factories.js';
import { waitFor } from '../../support/wait-for.js';
import { kafkaSuite, topicReader } from './kafka-suite.js';

const schemas = createSchemaRegistry();

describe('commands published to Kafka', function () {
  this.timeout(60_000);
  let reader: Awaited<ReturnType<typeof topicReader>>;

  before(async () => {
    const { topics } = kafkaSuite();
    reader = await topicReader([topics.enrollments, topics.edgePolicies, topics.events]);
  });
  after(() => reader.stop());

  it('puts an enrollment on its topic, keyed by device_id, with its event, and the feed shows it once', async () => {
    const { gateway, topics } = kafkaSuite();
    const tenant = gateway.tenant();
    const fleetId = uuid();
    const deviceId = uuid();
    const res = await gateway.call<{ data: EnrollmentAccepted }>('POST', `/projects/${tenant.projectId}/fleets/${fleetId}/devices/${deviceId}/enroll`, {
      headers: { ...(await tenant.headers({ sub: 'operator-1' })), 'idempotency-key': 'enroll-1' },
      body: { display_name: 'Pump', enrollment_type: 'factory' },
    });
    expect(res.status).to.equal(202);
    const enrollmentId = res.body.data.enrollment_id;

    const [command] = await reader.waitFor('enrollment command', (m) => m.topic === topics.enrollments && m.value?.includes(enrollmentId) === true);
    expect(command!.key).to.equal(deviceId);
    expect(command!.headers).to.deep.equal({
      'content-type': 'application/json',
      schema: 'enrollment-command.schema.json',
      'schema-version': '1',
      'idempotency-key': 'enroll-1',
    });
    const value = JSON.parse(command!.value!) as unknown;
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

    const [event] = await reader.waitFor('enrollment event', (m) => m.topic === topics.events && m.value?.includes(enrollmentId) === true);
    expect(event!.key).to.equal(deviceId);
    expect(event!.headers['schema']).to.equal('canonical-event.schema.json');
    expect(schemas.check('canonical-event.schema.json', JSON.parse(event!.value!)).ok).to.equal(true);

    const items = await waitFor('the enrollment in the feed', async () => {
      const feed = await gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?device_id=${deviceId}`, {
        headers: await tenant.headers(),
      });
      return feed.body.data.items.length > 0 ? feed.body.data.items : undefined;
    });
    expect(items.map((e) => e.correlation_id)).to.deep.equal([enrollmentId]);
  });

  it('puts an edge-policy patch on its topic, keyed by fleet_id, with its event', async () => {
    const { gateway, topics } = kafkaSuite();
    const tenant = gateway.tenant();
    const fleetId = uuid();
    const patch = { sync: { every_s: 60 }, drop: null };
    const res = await gateway.call<{ data: EdgePolicyAccepted }>('PATCH', `/projects/${tenant.projectId}/fleets/${fleetId}/edge/policy`, {
      headers: await tenant.headers(),
      body: patch,
    });
    expect(res.status).to.equal(200);
    const commandId = res.body.data.command_id;

    const [command] = await reader.waitFor('edge-policy command', (m) => m.topic === topics.edgePolicies && m.value?.includes(commandId) === true);
    expect(command!.key).to.equal(fleetId);
    const value = JSON.parse(command!.value!) as unknown;
    expect(schemas.check('edge-policy-command.schema.json', value).ok).to.equal(true);
    expect(value).to.deep.include({ command_id: commandId, fleet_id: fleetId, patch, type: 'edge-policy.merge-patch' });

    const [event] = await reader.waitFor('edge-policy event', (m) => m.topic === topics.events && m.value?.includes(commandId) === true);
    expect(event!.key).to.equal(tenant.projectId);
    expect(JSON.parse(event!.value!)).to.deep.include({ domain: 'edge', entity: 'policy', action: 'update_queued', fleet_id: fleetId });
  });

  it('keeps the commands of one device in order on one partition', async () => {
    const { gateway, topics } = kafkaSuite();
    const tenant = gateway.tenant();
    const headers = await tenant.headers();
    const deviceId = uuid();
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await gateway.call<{ data: EnrollmentAccepted }>('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${deviceId}/enroll`, { headers, body: { external_id: String(i) } });
      ids.push(res.body.data.enrollment_id);
    }
    const commands = await reader.waitFor('five commands of one device', (m) => m.topic === topics.enrollments && m.key === deviceId, 5);
    expect(new Set(commands.map((c) => c.partition)).size).to.equal(1);
    expect(commands.map((c) => (JSON.parse(c.value!) as { command_id: string }).command_id)).to.deep.equal(ids);
  });
});
