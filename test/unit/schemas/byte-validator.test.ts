import { isUtf8 } from 'node:buffer';
import { expect } from 'chai';
import fc from 'fast-check';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { UUID_PATTERN } from '../../../src/ids/uuid.js';
import { createCanonicalEventReader, jsonTextOf } from '../../../src/ingest/canonical-event-bytes.js';
import { MAX_JSON_DEPTH, readBoundedJson } from '../../../src/json/bounded-json.js';
import { compileByteValidator } from '../../../src/schemas/byte-validator.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { jsonReadsAsRow } from '../../../src/store/event-row-text.js';
import type { EventHead } from '../../../src/store/event-store.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent } from '../../support/factories.js';

const schemas = createSchemaRegistry();
const read = createCanonicalEventReader();
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 3000);

/** What the ingestor's full way makes of a UTF-8 text: the event and its stored timestamp, or undefined when it refuses it. */
function fullWay(bytes: Buffer): { event: CanonicalEvent; storedAt: string } | undefined {
  const reading = readBoundedJson(jsonTextOf(bytes).toString());
  if (!reading.ok) return undefined;
  const checked = schemas.check('canonical-event.schema.json', reading.value);
  if (!checked.ok) return undefined;
  try {
    return { event: checked.value, storedAt: toStoreTimestamp(checked.value.occurred_at) };
  } catch {
    return undefined;
  }
}

const headOf = ({ id, org_id, project_id, occurred_at, domain, entity, action }: EventHead): EventHead => ({ id, org_id, project_id, occurred_at, domain, entity, action });

/** A member as text, so that a test can write what JSON.stringify never does: a key twice, an escape, odd whitespace. */
type Member = readonly [key: string, valueText: string];

/** Mostly valid, so that the corpus holds texts the reader accepts as well as every way to be wrong. */
const mostly = <T,>(valid: fc.Arbitrary<T>, ...wrong: fc.Arbitrary<T>[]) => fc.oneof({ arbitrary: valid, weight: 19 * wrong.length }, ...wrong);
/** A fault, in about one text of five. */
const rarely = <T,>(fault: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(null), weight: 4 }, fault);

const uuidText = mostly(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => `urn:uuid:${u}`),
  fc.uuid().map((u) => u.replace(/-/g, '')),
  fc.tuple(fc.uuid(), fc.nat(35), fc.constantFrom('g', 'Z', '-', ' ', 'é')).map(([u, at, c]) => u.slice(0, at) + c + u.slice(at + 1)),
  fc.string({ maxLength: 40 }),
);

const digits = (n: number, width: number) => String(n).padStart(width, '0');
/** An integer of the range, or now and then one just outside it. */
const field = (min: number, max: number) => mostly(fc.integer({ min, max }), fc.constantFrom(min - 1, max + 1));

/** Timestamps written field by field, each field sometimes at or past its bound. */
const timestampText = fc.oneof(
  fc.date({ min: new Date('1850-01-01T00:00:00Z'), max: new Date('2350-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .record({
      year: mostly(fc.integer({ min: 1900, max: 2299 }), fc.constantFrom(1899, 2300)),
      month: field(1, 12),
      day: fc.oneof(field(1, 28), fc.constantFrom(29, 30, 31)),
      hour: field(0, 23),
      minute: field(0, 59),
      second: field(0, 59),
      fraction: mostly(fc.option(fc.stringMatching(/^\d{1,9}$/)), fc.stringMatching(/^\d{0,12}$/)),
      separator: mostly(fc.constant('T'), fc.constantFrom('t', ' ')),
      zone: mostly(fc.constant('Z'), fc.constantFrom('z', '+00:00', '-05:30', '+14:00', '')),
    })
    .map(
      (t) =>
        `${digits(t.year, 4)}-${digits(t.month, 2)}-${digits(t.day, 2)}${t.separator}${digits(t.hour, 2)}:${digits(t.minute, 2)}:${digits(t.second, 2)}` +
        `${t.fraction === null ? '' : `.${t.fraction}`}${t.zone}`,
    ),
  fc.string({ maxLength: 32 }),
);

/** A string JSON writes with no escape, of any code points. */
const plainString = (constraints: fc.StringConstraints) => fc.string(constraints).filter((s) => JSON.stringify(s) === `"${s}"`);

/** Strings as other services write them: any code point, control characters and quotes included. */
const anyString = mostly(plainString({ unit: 'grapheme', minLength: 1, maxLength: 140 }), fc.string({ maxLength: 140 }), fc.string({ unit: 'binary', maxLength: 140 }), fc.constant(''));

const jsonText = (value: unknown) => JSON.stringify(value);

/** A JSON value nested `depth` levels below a payload object. */
const nested = (depth: number) => '[' .repeat(depth) + '1' + ']'.repeat(depth);

const payloadText = mostly(
  fc.oneof(fc.constant('null'), fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 4 })).map(jsonText)),
  fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 4 })).map(jsonText),
  fc.integer({ min: MAX_JSON_DEPTH - 3, max: MAX_JSON_DEPTH + 1 }).map((depth) => `{"deep":${nested(depth)}}`),
  fc.constantFrom('{"__proto__":{"admin":true}}', '{"a":{"__proto__":1}}', '{"n":1e400}', '{"n":-1e309}', '{"n":1e-400}', '{"n":01}', '{"n":1.}', '{"n":-}', '{"a":1,"a":2}', '{"t":tru}', '[]', '"text"', '{}', '{ }'),
  fc.stringMatching(/^[-+0-9.eE]{1,12}$/).map((n) => `{"n":${n}}`),
);

const stringOrNull = (text: fc.Arbitrary<string>) => fc.oneof({ arbitrary: text.map(jsonText), weight: 3 }, fc.constant('null'));

/** The members of a canonical event, each sometimes missing, wrong or of another type. */
const members = fc
  .record({
    id: uuidText.map(jsonText),
    org_id: uuidText.map(jsonText),
    project_id: uuidText.map(jsonText),
    domain: anyString.map(jsonText),
    entity: anyString.map(jsonText),
    action: anyString.map(jsonText),
    occurred_at: timestampText.map(jsonText),
    correlation_id: stringOrNull(uuidText),
    device_id: stringOrNull(uuidText),
    fleet_id: stringOrNull(uuidText),
    payload: payloadText,
    source_service: stringOrNull(anyString),
    span_id: stringOrNull(anyString),
    trace_id: stringOrNull(anyString),
    wrongType: fc.constantFrom('1', 'true', '{}', '[]', '"x"', 'null'),
  })
  .chain(({ wrongType, ...values }) =>
    fc.record({
      kept: mostly(fc.constant(Object.entries(values) as Member[]), fc.subarray(Object.entries(values) as Member[], { minLength: 5 })),
      extra: rarely(fc.constantFrom<Member>(['extra', '1'], ['__proto__', '{}'], ['\\u0069d', jsonText('x')], ['ID', '"x"'], ['id', '"0"'])),
      retyped: rarely(fc.constantFrom(...Object.keys(values))),
      whitespace: fc.constantFrom('', ' ', '\n  ', '\t', '\r\n'),
      // A byte order mark, as some shippers write one ahead of the text.
      bom: rarely(fc.constant('\uFEFF')),
      wrongType: fc.constant(wrongType),
    }),
  )
  .map(({ kept, extra, retyped, whitespace, bom, wrongType }) => {
    const all: Member[] = kept.map(([key, value]) => [key, key === retyped ? wrongType : value]);
    if (extra !== null) all.splice(all.length >> 1, 0, extra);
    const body = all.map(([key, value]) => `${whitespace}${key.startsWith('\\') ? `"${key}"` : jsonText(key)}${whitespace}:${whitespace}${value}`).join(',');
    return `${bom ?? ''}${whitespace}{${body}${whitespace}}${whitespace}`;
  });

/** The text as bytes, sometimes broken: a byte changed, cut short, or one added. */
const messageBytes = fc
  .tuple(members, rarely(fc.tuple(fc.constantFrom('flip', 'cut', 'insert'), fc.nat(), fc.integer({ min: 0, max: 255 }))))
  .map(([text, damage]) => {
    const bytes = Buffer.from(text);
    if (damage === null || bytes.length === 0) return bytes;
    const [kind, at, byte] = damage;
    const i = at % bytes.length;
    if (kind === 'cut') return bytes.subarray(0, i);
    if (kind === 'flip') return Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i + 1)]);
    return Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
  });

describe('byte validator of canonical events', () => {
  it('accepts only what the full way accepts, with the same event, identity and stored timestamp', () => {
    let accepted = 0;
    fc.assert(
      fc.property(messageBytes, (bytes) => {
        // The ingestor refuses bytes that are not UTF-8 before either way reads them.
        fc.pre(isUtf8(bytes));
        const fast = read(bytes);
        if (fast === undefined) return;
        accepted += 1;
        const full = fullWay(bytes);
        expect(full, `accepted by bytes, refused the full way: ${bytes.toString()}`).to.not.equal(undefined);
        expect(headOf(fast.head)).to.deep.equal(headOf(full!.event));
        expect(fast.storedAt).to.equal(full!.storedAt);
        expect(fast.event).to.deep.equal(full!.event);
        // The row is the text without what surrounds it (a byte order mark, whitespace, the line break a shipper ends with).
        expect(fast.json).to.deep.equal(jsonTextOf(bytes));
        // It hands its text on as the row, so the store does not check it again; the store's own check of that text must agree.
        expect(jsonReadsAsRow(fast, fast.json!), `handed on as its own row, but the text check refuses: ${fast.json!.toString()}`).to.equal(true);
      }),
      { numRuns: RUNS },
    );
    // A reader that accepted nothing would pass the property above; the corpus has valid texts in it.
    expect(accepted).to.be.greaterThan(0);
  });

  it('accepts every canonical event written plainly, whatever its strings hold', () => {
    // Code points, as the schema counts its lengths: 128 may take 512 bytes.
    const plain = plainString({ unit: 'binary', minLength: 1, maxLength: 128 });
    const event = fc.record({
      domain: plain,
      entity: plain,
      action: plain,
      occurred_at: fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2299-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
      payload: fc.oneof(fc.constant(null), fc.dictionary(plain, fc.jsonValue({ maxDepth: 5 }).filter((v) => !JSON.stringify(v).includes('\\')))),
      source_service: fc.option(plain),
      upper: fc.boolean(),
    });
    fc.assert(
      fc.property(event, ({ upper, ...fields }) => {
        const e = canonicalEvent(fields);
        const text = JSON.stringify(upper ? { ...e, id: e.id.toUpperCase(), org_id: e.org_id.toUpperCase() } : e);
        fc.pre(!text.includes('\\') && !text.includes('"__proto__"'));
        const fast = read(Buffer.from(text));
        expect(fast, text).to.not.equal(undefined);
        expect(fast!.event).to.deep.equal(JSON.parse(text));
      }),
      { numRuns: RUNS },
    );
  });

  it('leaves to the full way each text it is not sure of', () => {
    const event = canonicalEvent({ occurred_at: '2026-03-04T05:06:07.123Z' });
    const texts: Record<string, string> = {
      'an escape in a value': JSON.stringify({ ...event, domain: 'line\nbreak' }),
      'a key given twice': JSON.stringify(event).replace('{', '{"domain":"first",'),
      'an offset timestamp': JSON.stringify({ ...event, occurred_at: '2026-03-04T06:06:07.123+01:00' }),
      'a leap second': JSON.stringify({ ...event, occurred_at: '2016-12-31T23:59:60Z' }),
      'a year the store cannot hold': JSON.stringify({ ...event, occurred_at: '1899-12-31T23:59:59Z' }),
      'ten fraction digits': JSON.stringify({ ...event, occurred_at: '2026-03-04T05:06:07.1234567890Z' }),
      'an unknown member': JSON.stringify({ ...event, extra: 1 }),
      'a member missing': JSON.stringify({ ...event, domain: undefined }),
      'a domain too long': JSON.stringify({ ...event, domain: 'é'.repeat(129) }),
      'a payload nested too deep': JSON.stringify({ ...event, payload: { a: JSON.parse(nested(MAX_JSON_DEPTH - 1)) as unknown } }),
      'a __proto__ key in the payload': JSON.stringify(event).replace('"payload":{', '"payload":{"__proto__":{},'),
      'a number beyond a double': JSON.stringify(event).replace('21.5', '1e999'),
      'trailing text': `${JSON.stringify(event)} x`,
      'an id whose closing quote is another character': JSON.stringify(event).replace(`"${event.device_id!}",`, `"${event.device_id!}x,`),
    };
    for (const [what, text] of Object.entries(texts)) expect(read(Buffer.from(text)), what).to.equal(undefined);
    expect(read(Buffer.from(JSON.stringify(event))), 'the same event written plainly').to.not.equal(undefined);
    // Lengths are counted in characters, not bytes, as AJV counts them.
    expect(read(Buffer.from(JSON.stringify({ ...event, domain: 'é'.repeat(128), entity: '😀'.repeat(128) })))).to.not.equal(undefined);
    // The deepest payload the rules allow is still taken.
    expect(read(Buffer.from(JSON.stringify({ ...event, payload: { a: JSON.parse(nested(MAX_JSON_DEPTH - 2)) as unknown } })))).to.not.equal(undefined);
  });

  it('takes exactly the ids the UUID pattern takes, character by character', () => {
    const base = canonicalEvent({ occurred_at: '2026-03-04T05:06:07.123Z' });
    const id = '0123abcd-ef45-6789-ABCD-ef0123456789';
    const ids = [id, id.slice(0, 35), `${id}0`, `${id}-`, ` ${id}`];
    for (let at = 0; at < id.length; at++) for (const c of ['0', 'f', 'F', 'g', '-', ' ', 'é']) ids.push(id.slice(0, at) + c + id.slice(at + 1));
    for (const candidate of ids) {
      const accepted = read(Buffer.from(JSON.stringify({ ...base, device_id: candidate }))) !== undefined;
      expect(accepted, candidate).to.equal(UUID_PATTERN.test(candidate));
    }
  });

  it('refuses at start a schema with a rule it cannot check, rather than skipping the rule', () => {
    const schema = { type: 'object', additionalProperties: false, properties: { id: { type: 'string', pattern: '^a' } } };
    expect(() => compileByteValidator(schema, [])).to.throw(/keyword "pattern" of property "id"/);
    expect(() => compileByteValidator({ ...schema, properties: { id: { type: 'integer' } } }, [])).to.throw(/type "integer"/);
    expect(() => compileByteValidator({ type: 'object', properties: {} }, [])).to.throw(/closed object/);
  });
});
