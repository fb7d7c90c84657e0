import { Parser } from '@asyncapi/parser';
import { expect } from 'chai';
import { asyncApiDocument } from '../../../src/asyncapi/asyncapi-document.js';
import type { CommandContext, CommandEnvironment } from '../../../src/commands/command-context.js';
import { edgePolicy } from '../../../src/commands/catalogue/edge-policy.js';
import { enrollment } from '../../../src/commands/catalogue/enrollment.js';
import { catalogue, commandTopics } from '../../../src/commands/catalogue.js';
import { acceptCommand } from '../../../src/commands/command-handler.js';
import { loadConfig } from '../../../src/config/config.js';
import { deadLetterMessage, deadLetterReference } from '../../../src/ingest/dead-letter.js';
import { REJECT_REASONS } from '../../../src/ingest/event-ingestor.js';
import { schemaComponent } from '../../../src/schemas/schema-components.js';
import { schemasById, type SchemaId } from '../../../src/schemas/schema-files.js';
import type { PublishRequest } from '../../../src/commands/command-publisher.js';
import { messageCheck, type AsyncApiContract, type KafkaRecord } from '../../support/asyncapi-messages.js';
import { uuid } from '../../support/factories.js';
import type { JsonValue } from '../../../src/json/json-value.js';

const document = () => asyncApiDocument() as unknown as AsyncApiContract & { components: { schemas: Record<string, unknown> } };

const env: CommandEnvironment = { now: () => new Date('2026-05-04T10:11:12.345Z'), newId: uuid };
const context = (over: Partial<CommandContext> = {}): CommandContext => ({
  orgId: uuid(),
  requestedBy: 'operator-1',
  trace: { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' },
  requestId: uuid(),
  ...over,
});

/** A command as a reader of its topic gets it. */
const asRead = ({ command }: PublishRequest): KafkaRecord => ({ key: command.key, value: JSON.stringify(command.value), headers: command.headers });

describe('AsyncAPI document', () => {
  it('is an AsyncAPI 3.0 document in which @asyncapi/parser finds no error and no warning', async function () {
    // The parser loads and runs a whole rule engine: seconds on a loaded machine.
    this.timeout(60_000);
    const { document: parsed, diagnostics } = await new Parser().parse(JSON.stringify(asyncApiDocument()));
    // 0 is an error and 1 a warning; the parser's rules also give hints, such as that a newer AsyncAPI version exists.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- the enum is spectral-core's private copy of @stoplight/types, which nothing exports.
    expect(diagnostics.filter((d) => d.severity <= 1).map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`)).to.deep.equal([]);
    expect(parsed, 'the parser returned no document').to.not.equal(undefined);
    expect(parsed!.version()).to.equal('3.0.0');

    const operations = parsed!.operations().all().map((o) => [o.action(), o.channels().all().map((c) => c.address())]);
    // The gateway sends each catalogue entry's commands, and the consumer receives them.
    expect(operations).to.have.deep.members([
      ...catalogue.flatMap(({ topic }) => [['send', [topic.default]], ['receive', [topic.default]]]),
      ['receive', ['platform.events']],
      ['send', ['platform.events.dlq']],
    ]);
    const enrollment = parsed!.channels().all().find((c) => c.address() === 'core.device-enrollment.commands')!.messages().all()[0]!;
    expect(enrollment.payload()!.title()).to.equal('EnrollmentCommand');
    expect(enrollment.headers()!.required()).to.include('request-id');
  });

  it('has one channel for each topic the product reads or writes, at its default name', () => {
    const { topics } = loadConfig({});
    const addresses = Object.values(document().channels).map((c) => c.address);
    expect(addresses).to.have.members([...topics.events, ...commandTopics(topics).map(({ topic }) => topic), topics.deadLetter]);
  });

  it('gives the message values the schemas of schemas/ themselves, and carries no other schema', () => {
    const doc = document();
    const check = messageCheck(doc);
    const valueOf = (address: string) => {
      const [name] = check.messagesOf(address);
      return (doc.components.messages[name!]!.payload as { $ref: string }).$ref;
    };
    expect(valueOf('platform.events')).to.equal('#/components/schemas/CanonicalEvent');
    for (const { topic, schemas } of catalogue) expect(valueOf(topic.default)).to.equal(`#/components/schemas/${schemasById[schemas.command].title}`);
    // The values' schemas and every schema they refer to, and nothing else.
    const carried = new Set<SchemaId>();
    const carry = (id: SchemaId): void => {
      if (carried.has(id)) return;
      carried.add(id);
      for (const [, ref] of JSON.stringify(schemasById[id]).matchAll(/"\$ref":"([a-z-]+\.schema\.json)"/g)) carry(ref as SchemaId);
    };
    for (const id of ['canonical-event.schema.json', ...catalogue.map(({ schemas }) => schemas.command)] as const) carry(id);
    // Read as JSON, as the generator reads them: a union of all the files is more than JsonValue's type can check.
    const component = (id: SchemaId) => [schemasById[id].title, schemaComponent(schemasById[id] as unknown as JsonValue)];
    expect(doc.components.schemas).to.deep.equal(Object.fromEntries([...carried].map(component)));
  });

  it('describes the keys and headers of the commands the gateway builds, with and without their optional headers', () => {
    const check = messageCheck(document());
    const path = { project_id: uuid(), fleet_id: uuid(), device_id: uuid() };
    const enrollments = [
      acceptCommand(enrollment, { context: context(), path, body: { display_name: 'Pump 7' }, idempotencyKey: 'key-1' }, 'core.device-enrollment.commands', env),
      acceptCommand(enrollment, { context: context({ trace: undefined }), path, body: {}, idempotencyKey: undefined }, 'core.device-enrollment.commands', env),
    ].map((built) => asRead(built.publish));
    expect(enrollments[0]!.headers).to.include.keys('traceparent', 'idempotency-key', 'request-id');
    for (const record of enrollments) expect(check.problems('EnrollmentCommand', record)).to.deep.equal([]);

    const { project_id, fleet_id } = path;
    const edge = asRead(acceptCommand(edgePolicy, { context: context(), path: { project_id, fleet_id }, body: { sync: { every_s: 30 } }, idempotencyKey: undefined }, 'core.edge-policy.commands', env).publish);
    expect(edge.key).to.equal(fleet_id);
    expect(check.problems('EdgePolicyCommand', edge)).to.deep.equal([]);

    // The check is real: what the document does not allow is found.
    const [first] = enrollments;
    const { 'request-id': _dropped, ...withoutRequestId } = first!.headers;
    expect(check.problems('EnrollmentCommand', { ...first!, headers: withoutRequestId })).to.have.length(1);
    expect(check.problems('EnrollmentCommand', { ...first!, headers: { ...first!.headers, extra: 'x' } })).to.have.length(1);
    expect(check.problems('EnrollmentCommand', { ...first!, key: 'not-a-uuid' })).to.have.length(1);
    expect(check.problems('EdgePolicyCommand', first!)).to.not.deep.equal([]);
  });

  it('gives every message an example that validates against it, keyed as the document says', () => {
    const doc = document();
    const check = messageCheck(doc);
    const keyOf: Record<string, (payload: Record<string, string>) => string | null> = {
      CanonicalEvent: (p) => p['device_id'] ?? p['project_id']!,
      ...Object.fromEntries(catalogue.map(({ docs, partitionKey }) => [docs.message, (p: Record<string, string>) => p[partitionKey]!])),
      DeadLetter: () => null,
    };
    expect(Object.keys(doc.components.messages)).to.have.members(Object.keys(keyOf));
    for (const [name, message] of Object.entries(doc.components.messages)) {
      const examples = (message as { examples?: { headers: Record<string, string>; payload: unknown }[] }).examples ?? [];
      expect(examples, name).to.have.length.greaterThan(0);
      for (const { headers, payload } of examples) {
        const json = typeof payload !== 'string';
        const record: KafkaRecord = { key: keyOf[name]!(json ? (payload as Record<string, string>) : {}), value: json ? JSON.stringify(payload) : payload, headers };
        expect(check.problems(name, record), name).to.deep.equal([]);
      }
    }
  });

  it('describes the dead letters the consumer builds, for every reason', () => {
    const check = messageCheck(document());
    for (const reason of REJECT_REASONS) {
      const letter = deadLetterMessage({
        message: { key: null, value: Buffer.from('{not json'), headers: { origin: 'sensor-hub' }, source: { topic: 'platform.events', partition: 2, offset: '41' } },
        reason,
        detail: 'é'.repeat(3000),
      });
      const record: KafkaRecord = {
        key: null,
        value: String(letter.value),
        headers: Object.fromEntries(Object.entries(letter.headers!).map(([name, value]) => [name, String(value)])),
      };
      expect(check.problems('DeadLetter', record), reason).to.deep.equal([]);
    }
    const reference = deadLetterReference({
      message: { key: 'k'.repeat(5000), value: 'v'.repeat(2_000_000), headers: { origin: 'sensor-hub' }, source: { topic: 'platform.events', partition: 2, offset: '41' } },
      reason: 'invalid-json',
      detail: 'message value is not valid JSON',
    });
    const referenceRecord: KafkaRecord = {
      key: String(reference.key),
      value: String(reference.value),
      headers: Object.fromEntries(Object.entries(reference.headers!).map(([name, value]) => [name, String(value)])),
    };
    expect(check.problems('DeadLetter', referenceRecord), 'a reference').to.deep.equal([]);
    const forged: KafkaRecord = { key: 'k', value: 'v', headers: { 'dlq-reason': 'forged', 'dlq-detail': 'd', 'dlq-source-topic': 't', 'dlq-source-partition': '0', 'dlq-source-offset': '0' } };
    expect(check.problems('DeadLetter', forged)).to.have.length(1);
  });
});
