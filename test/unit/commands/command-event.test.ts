import { expect } from 'chai';
import { commandEvent, nameBasedUuid } from '../../../src/commands/command-event.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { edgePolicyCommand, enrollmentCommand } from '../../support/factories.js';

const schemas = createSchemaRegistry();
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('the canonical event derived from a command', () => {
  it('announces an enrollment with every field the feed shows', () => {
    const command = enrollmentCommand();
    const event = commandEvent(command, TRACEPARENT);
    expect(schemas.check('canonical-event.schema.json', event).ok).to.equal(true);
    expect(event).to.deep.equal({
      id: event.id,
      org_id: command.org_id,
      project_id: command.project_id,
      domain: 'devices',
      entity: 'enrollment',
      action: 'queued',
      occurred_at: command.requested_at,
      correlation_id: command.command_id,
      device_id: command.device_id,
      fleet_id: command.fleet_id,
      payload: { enrollment_id: command.command_id, display_name: 'Pump 7', enrollment_type: 'factory' },
      source_service: 'core-gateway',
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      span_id: '00f067aa0ba902b7',
    });
  });

  it('announces an edge-policy patch, with no device and no trace when the message has none', () => {
    const command = edgePolicyCommand();
    const event = commandEvent(command, undefined);
    expect(schemas.check('canonical-event.schema.json', event).ok).to.equal(true);
    expect(event).to.deep.include({
      domain: 'edge',
      entity: 'policy',
      action: 'update_queued',
      device_id: null,
      fleet_id: command.fleet_id,
      correlation_id: command.command_id,
      payload: { command_id: command.command_id, patch: command.patch },
      trace_id: null,
      span_id: null,
    });
  });

  it('gets the same id from the same command every time, and another id from another command', () => {
    const command = enrollmentCommand();
    expect(commandEvent(command, undefined).id).to.equal(commandEvent({ ...command }, TRACEPARENT).id);
    expect(commandEvent(enrollmentCommand(), undefined).id).to.not.equal(commandEvent(command, undefined).id);
    const edge = edgePolicyCommand({ command_id: command.command_id });
    expect(commandEvent(edge, undefined).id, 'an edge-policy event never shares an enrollment event id').to.not.equal(commandEvent(command, undefined).id);
  });
});

describe('name-based uuid', () => {
  it('is an RFC 9562 version 5 uuid, stable for a name', () => {
    const id = nameBasedUuid('a');
    expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(nameBasedUuid('a')).to.equal(id);
    expect(nameBasedUuid('b')).to.not.equal(id);
  });
});
