import { expect } from 'chai';
import { catalogue } from '../../../src/commands/catalogue.js';
import { COMMAND_BODY_MAX_DEPTH } from '../../../src/commands/command-entry.js';
import { acceptCommand } from '../../../src/commands/command-handler.js';
import { MAX_JSON_DEPTH, readBoundedJson } from '../../../src/json/bounded-json.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { deepestCommandBody, uuid } from '../../support/factories.js';

const schemas = createSchemaRegistry();

const depthOf = (value: unknown): number =>
  value !== null && typeof value === 'object' ? 1 + Math.max(0, ...Object.values(value as Record<string, unknown>).map(depthOf)) : 0;

describe('how deep a command body may nest', () => {
  for (const entry of catalogue) {
    it(`${entry.name}: the message of the deepest body the route takes is one the topic's readers take`, () => {
      const deepest = deepestCommandBody(entry, COMMAND_BODY_MAX_DEPTH);
      // A schema that nests no object that deep: its example body is as deep as its bodies go.
      const body = deepest ?? entry.docs.example.body;
      if (deepest !== undefined) expect(depthOf(body)).to.equal(COMMAND_BODY_MAX_DEPTH);
      expect(schemas.check(entry.schemas.request, body, 'body').ok).to.equal(true);
      const input = {
        context: { orgId: uuid(), requestedBy: 'alice', trace: undefined, requestId: 'req-1' },
        path: { project_id: uuid(), fleet_id: uuid(), device_id: uuid() },
        body,
        idempotencyKey: undefined,
      };
      const { publish } = acceptCommand(entry, input as never, 'topic', { now: () => new Date('2026-06-01T12:00:00Z'), newId: uuid });
      const text = JSON.stringify(publish.command.value);
      // What the ingest consumer, and any reader of docs/kafka-contract.md, does with the message.
      const reading = readBoundedJson(text);
      expect(reading.ok, text.slice(0, 80)).to.equal(true);
      expect(depthOf(publish.command.value)).to.be.at.most(MAX_JSON_DEPTH);
      expect(schemas.check(entry.schemas.command, publish.command.value).ok).to.equal(true);
    });
  }
});
