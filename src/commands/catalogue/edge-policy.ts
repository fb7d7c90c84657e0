import { defineCommand } from '../command-entry.js';

/** PATCH .../fleets/{fleet_id}/edge/policy: a JSON Merge Patch (RFC 7386) of a fleet's edge policy. */
export const edgePolicy = defineCommand({
  name: 'edge-policy',
  type: 'edge-policy.merge-patch',
  http: {
    method: 'patch',
    path: '/projects/:project_id/fleets/:fleet_id/edge/policy',
    status: 200,
    absentBody: { refusal: 'is required: a JSON Merge Patch object' },
  },
  permission: 'edge-policy:write',
  schemas: {
    path: 'fleet-path.schema.json',
    request: 'edge-policy-patch.schema.json',
    accepted: 'edge-policy-accepted.schema.json',
    command: 'edge-policy-command.schema.json',
  },
  topic: { configKey: 'edgePolicyCommands', setting: 'EDGE_POLICY_COMMANDS_TOPIC', default: 'core.edge-policy.commands' },
  partitionKey: 'fleet_id',
  idField: 'command_id',
  idempotency: undefined,
  accept({ context, path, body }, commandId, at) {
    return {
      command: {
        command_id: commandId,
        type: 'edge-policy.merge-patch',
        schema_version: 1,
        org_id: context.orgId,
        project_id: path.project_id,
        fleet_id: path.fleet_id,
        patch: body,
        requested_at: at,
        requested_by: context.requestedBy,
      },
      response: { command_id: commandId, ...path, patch: body, status: 'accepted', accepted_at: at },
    };
  },
  event: {
    domain: 'edge',
    entity: 'policy',
    action: 'update_queued',
    deviceId: () => null,
    payload: (command) => ({ command_id: command.command_id, patch: command.patch }),
  },
  docs: {
    operationId: 'updateEdgePolicy',
    tag: { name: 'edge-policy', description: 'Fleet edge policy' },
    summary: 'Update the edge policy of a fleet with a JSON Merge Patch (RFC 7386).',
    accepted: 'Update accepted.',
    message: 'EdgePolicyCommand',
    title: 'Edge-policy command',
    messageSummary: 'A fleet edge-policy update the gateway accepted (PATCH .../edge/policy answered 200); apply patch as a JSON Merge Patch (RFC 7386).',
    keyDescription: 'fleet_id: one fleet\'s commands share a partition, in the order the gateway accepted them.',
    example: {
      name: 'sync-every-30s',
      summary: 'PATCH .../edge/policy that sets sync.every_s and removes drop',
      path: { project_id: '5b2e9c41-7d3a-4e8f-b1c6-9a0d2f4e6b13', fleet_id: 'c3a8e5d2-1f4b-4a6c-8e9d-7b0a2c4e6f35' },
      body: { sync: { every_s: 30 }, drop: null },
      anotherBody: { sync: { every_s: 60 } },
    },
    channel: {
      title: 'Edge-policy commands',
      description:
        'The record of the edge-policy updates the gateway accepted, on the same terms as the enrollment commands. Read by the services that apply fleet policies and by the ingest consumer, which derives the edge/policy/update_queued event.',
    },
    publish: {
      title: 'Publish an edge-policy command',
      summary: 'The gateway publishes each edge-policy update it accepts, and answers 200 only after all in-sync replicas acknowledged it.',
    },
    ingest: {
      title: 'Derive the events of edge-policy updates',
      summary: 'The ingest consumer stores the canonical event of each edge-policy command; a message that is not a valid command is dead-lettered.',
    },
  },
});
