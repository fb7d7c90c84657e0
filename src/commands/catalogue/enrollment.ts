import { defineCommand } from '../command-entry.js';

/** POST .../devices/{device_id}/enroll: a device joins its fleet's integration namespace. */
export const enrollment = defineCommand({
  name: 'enrollment',
  type: 'device.enroll',
  http: {
    method: 'post',
    path: '/projects/:project_id/fleets/:fleet_id/devices/:device_id/enroll',
    status: 202,
    // Every body field is optional, so no body at all is an empty enrollment request.
    absentBody: { value: {} },
  },
  permission: 'devices:enroll',
  schemas: {
    path: 'device-path.schema.json',
    request: 'enrollment-request.schema.json',
    accepted: 'enrollment-accepted.schema.json',
    command: 'enrollment-command.schema.json',
  },
  topic: { configKey: 'enrollmentCommands', setting: 'ENROLLMENT_COMMANDS_TOPIC', default: 'core.device-enrollment.commands' },
  partitionKey: 'device_id',
  idField: 'enrollment_id',
  idempotency: { scope: 'enroll' },
  accept({ context, path, body, idempotencyKey }, commandId, at) {
    return {
      command: {
        command_id: commandId,
        type: 'device.enroll',
        schema_version: 1,
        org_id: context.orgId,
        project_id: path.project_id,
        fleet_id: path.fleet_id,
        device_id: path.device_id,
        body,
        requested_at: at,
        requested_by: context.requestedBy,
        ...(idempotencyKey === undefined ? {} : { idempotency_key: idempotencyKey }),
      },
      response: { enrollment_id: commandId, status: 'queued', ...path, ...body, queued_at: at },
    };
  },
  event: {
    domain: 'devices',
    entity: 'enrollment',
    action: 'queued',
    deviceId: (command) => command.device_id,
    payload: (command) => ({ enrollment_id: command.command_id, ...command.body }),
  },
  docs: {
    operationId: 'enrollDevice',
    tag: { name: 'devices', description: 'Device enrollment' },
    summary: 'Enroll a device into its fleet\'s integration namespace.',
    accepted: 'Enrollment queued.',
    message: 'EnrollmentCommand',
    title: 'Enrollment command',
    messageSummary: 'A device enrollment the gateway accepted (POST .../devices/{device_id}/enroll answered 202).',
    keyDescription: 'device_id: one device\'s commands share a partition, in the order the gateway accepted them.',
    example: {
      name: 'enroll',
      summary: 'POST .../devices/{device_id}/enroll with an Idempotency-Key and a traceparent',
      path: { project_id: '5b2e9c41-7d3a-4e8f-b1c6-9a0d2f4e6b13', fleet_id: 'c3a8e5d2-1f4b-4a6c-8e9d-7b0a2c4e6f35', device_id: '9e4d2c1b-8a7f-4e6d-b5c3-1a2b3c4d5e6f' },
      body: { display_name: 'Pump 7', enrollment_type: 'factory' },
      anotherBody: {},
      idempotencyKey: 'enroll-pump-7',
    },
    channel: {
      title: 'Device enrollment commands',
      description:
        'The record of the enrollments the gateway accepted: a command is here if and only if the gateway answered 2xx for it, or 503 after the write had gone out. Written only by the gateway (idempotent producer, acks from all in-sync replicas, no transactions); read by the services that carry out enrollments and by the ingest consumer, which derives the devices/enrollment/queued event. At least once: apply a command once per command_id.',
    },
    publish: {
      title: 'Publish an enrollment command',
      summary: 'The gateway publishes each enrollment it accepts, and answers 202 only after all in-sync replicas acknowledged it.',
    },
    ingest: {
      title: 'Derive the events of enrollments',
      summary: 'The ingest consumer stores the canonical event of each enrollment command, with its traceparent\'s ids; a message that is not a valid command is dead-lettered.',
    },
  },
});
