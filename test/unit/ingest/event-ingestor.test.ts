import { expect } from 'chai';
import { ClickHouseError } from '@clickhouse/client';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { commandEvent } from '../../../src/commands/command-event.js';
import { createEventIngestor, SickStoreError } from '../../../src/ingest/event-ingestor.js';
import { MAX_JSON_DEPTH } from '../../../src/json/bounded-json.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import type { EventStore } from '../../../src/store/event-store.js';
import { toStoreError } from '../../../src/store/store-errors.js';
import { canonicalEvent, edgePolicyCommand, enrollmentCommand } from '../../support/factories.js';

/** The read side of the store port: the ingestor only writes, so any read is a bug here. */
const NO_READS: Pick<EventStore, 'listEvents' | 'tailHorizon' | 'tailEvents' | 'tailProjects' | 'changedProjects' | 'writtenEvents'> = {
  async listEvents() {
    return { events: [] };
  },
  async tailHorizon(): Promise<never> {
    throw new Error('the ingestor does not read');
  },
  async tailEvents(): Promise<never> {
    throw new Error('the ingestor does not read');
  },
  async tailProjects(): Promise<never> {
    throw new Error('the ingestor does not read');
  },
  async changedProjects(): Promise<never> {
    throw new Error('the ingestor does not read');
  },
  async writtenEvents(): Promise<never> {
    throw new Error('the ingestor does not read');
  },
};

function memoryStore(fail = false) {
  const batches: CanonicalEvent[][] = [];
  const store: EventStore = {
    async insertEvents(events) {
      if (fail) throw new Error('store down');
      batches.push(events.map((e) => e.event));
    },
    async probeWrite() {
      if (fail) throw new Error('store down');
    },
    ...NO_READS,
  };
  return { store, batches };
}

/**
 * A store with a constraint on entity, refusing a whole insert that holds a 'poison' event
 * as ClickHouse does (the server transport's error, wrapped as the transport wraps it), and
 * that may fall sick from a given insert on.
 */
function constrainedStore(options: { sickFromInsert?: number } = {}) {
  const stored: string[] = [];
  const state = { inserts: 0 };
  const store: EventStore = {
    async insertEvents(events) {
      state.inserts += 1;
      if (options.sickFromInsert !== undefined && state.inserts >= options.sickFromInsert) throw toStoreError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'insert');
      if (events.some((e) => e.event.entity === 'poison')) {
        const message = "Constraint `no_poison` for table default.events is violated at row 1. Expression: (entity != 'poison'). ";
        throw toStoreError(new ClickHouseError({ message, code: '469', type: 'VIOLATED_CONSTRAINT' }), 'insert');
      }
      stored.push(...events.map((e) => e.event.id));
    },
    async probeWrite() {
      if (options.sickFromInsert !== undefined && state.inserts >= options.sickFromInsert) throw toStoreError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'insert');
    },
    ...NO_READS,
  };
  return { store, stored, state };
}

const schemas = createSchemaRegistry();
const raw = (value: unknown) => ({ value: typeof value === 'string' ? value : JSON.stringify(value) });

describe('event ingestor', () => {
  it('stores a batch of valid events in one write, each id once', async () => {
    const { store, batches } = memoryStore();
    const a = canonicalEvent();
    const b = canonicalEvent();
    const result = await createEventIngestor({ store, schemas }).ingestMessages([raw(a), raw(b), raw(a)]);
    expect(result.rejected).to.deep.equal([]);
    expect(batches).to.have.length(1);
    expect(batches[0]!.map((e) => e.id)).to.deep.equal([a.id, b.id]);
  });

  it('returns invalid messages with their reason and stores the valid ones behind them', async () => {
    const { store, batches } = memoryStore();
    const good = canonicalEvent();
    const { id: _id, ...withoutId } = canonicalEvent();
    const result = await createEventIngestor({ store, schemas }).ingestMessages([
      { value: null },
      raw('{not json'),
      raw(withoutId),
      raw({ ...canonicalEvent(), extra: 1 }),
      raw(canonicalEvent({ occurred_at: '1800-01-01T00:00:00Z' })),
      raw(good),
    ]);
    expect(result.rejected.map((r) => r.reason)).to.deep.equal([
      'empty-value',
      'invalid-json',
      'schema-violation',
      'schema-violation',
      'timestamp-out-of-range',
    ]);
    expect(result.rejected[2]!.detail).to.equal('id is required');
    expect(result.rejected[3]!.detail).to.equal('extra is not allowed');
    expect(batches).to.deep.equal([[good]]);
    expect(result.stored).to.equal(1);
  });

  it('keeps two organizations\' events that share an id, and folds only copies of the same event', async () => {
    const { store, batches } = memoryStore();
    const shared = canonicalEvent({ occurred_at: '2026-04-01T10:00:00Z' });
    const otherTenant = { ...shared, org_id: canonicalEvent().org_id, project_id: canonicalEvent().project_id };
    // The same instant spelled two ways is the same event redelivered.
    const copy = { ...shared, occurred_at: '2026-04-01T10:00:00.000000Z', id: shared.id.toUpperCase() };
    const result = await createEventIngestor({ store, schemas }).ingestMessages([raw(shared), raw(otherTenant), raw(copy)]);
    expect(result).to.deep.equal({ stored: 3, rejected: [] });
    expect(batches).to.have.length(1);
    expect(batches[0]!.map((e) => e.org_id)).to.deep.equal([shared.org_id, otherTenant.org_id]);
  });

  it('keeps an event of one id at two instants: the store keeps both rows', async () => {
    const { store, batches } = memoryStore();
    const first = canonicalEvent({ occurred_at: '2026-04-01T10:00:00Z' });
    const later = { ...first, occurred_at: '2026-04-01T10:00:01Z' };
    await createEventIngestor({ store, schemas }).ingestMessages([raw(first), raw(later)]);
    expect(batches[0]).to.have.length(2);
  });

  it('dead-letters values that break the JSON rules HTTP bodies keep, and stores their neighbours', async () => {
    const { store, batches } = memoryStore();
    const good = canonicalEvent();
    const deep = (depth: number) => {
      const text = JSON.stringify(canonicalEvent());
      return text.replace('{"temperature":21.5}', `${'['.repeat(depth)}${']'.repeat(depth)}`.replace(/^\[/, '{"a":[').replace(/\]$/, ']}'));
    };
    const messages = [
      raw(deep(20_000)),
      raw(deep(MAX_JSON_DEPTH + 1)),
      raw(JSON.stringify(canonicalEvent()).replace('21.5', '1e400')),
      raw(JSON.stringify(canonicalEvent()).replace('"temperature"', '"__proto__"')),
      { value: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) },
      raw(good),
    ];
    const result = await createEventIngestor({ store, schemas }).ingestMessages(messages);
    expect(result.rejected.map((r) => r.reason)).to.deep.equal(['json-limit-exceeded', 'json-limit-exceeded', 'json-limit-exceeded', 'json-limit-exceeded', 'invalid-json']);
    expect(result.rejected[0]!.detail).to.equal(`message value nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
    expect(result.rejected[4]!.detail).to.equal('message value is not UTF-8 text');
    expect(batches).to.deep.equal([[good]]);
  });

  it('takes a failure of encoding one row, with no store code, as that row\'s refusal and not as a sick store', async () => {
    const stored: string[] = [];
    const store: EventStore = {
      async insertEvents(events) {
        // What JSON.stringify throws for a value nested too deep, wrapped as the transports wrap it.
        if (events.some((e) => e.event.entity === 'unencodable')) throw toStoreError(new RangeError('Maximum call stack size exceeded'), 'insert');
        stored.push(...events.map((e) => e.event.id));
      },
      async probeWrite() {},
      ...NO_READS,
    };
    const good = Array.from({ length: 9 }, () => canonicalEvent());
    const bad = canonicalEvent({ entity: 'unencodable' });
    const result = await createEventIngestor({ store, schemas }).ingestMessages([...good.slice(0, 4), bad, ...good.slice(4)].map(raw));
    expect(stored.sort()).to.deep.equal(good.map((e) => e.id).sort());
    expect(result.rejected.map((r) => [r.reason, r.detail])).to.deep.equal([['store-rejected', 'RangeError while encoding the row: Maximum call stack size exceeded']]);
  });

  /**
   * A store that fails an insert holding a 'framing' event with an engine code no list
   * names (what chDB said of a body an empty line cut short), and whose answer to the
   * known-good write is `probe`.
   */
  function unlistedFailureStore(probe: () => Promise<void>) {
    const stored: string[] = [];
    let probes = 0;
    const store: EventStore = {
      async insertEvents(events) {
        if (events.some((e) => e.event.entity === 'framing')) {
          throw toStoreError(new Error('Code: 62. DB::Exception: Syntax error: failed at position 1: {"id". Expected one of: SELECT. (SYNTAX_ERROR) (version 26.7.2.1)'), 'insert');
        }
        stored.push(...events.map((e) => e.event.id));
      },
      async probeWrite() {
        probes += 1;
        await probe();
      },
      ...NO_READS,
    };
    return { store, stored, probes: () => probes };
  }

  it('asks the store about a failure no list names, and dead-letters the row it refuses alone while it takes a known-good write', async () => {
    const { store, stored, probes } = unlistedFailureStore(async () => {});
    const good = Array.from({ length: 30 }, () => canonicalEvent());
    const bad = canonicalEvent({ entity: 'framing' });
    const result = await createEventIngestor({ store, schemas }).ingestMessages([...good.slice(0, 11), bad, ...good.slice(11)].map(raw));
    expect(stored.sort()).to.deep.equal(good.map((e) => e.id).sort());
    expect(result.rejected.map((r) => [r.reason, r.detail])).to.deep.equal([['store-rejected', 'SYNTAX_ERROR (62): Syntax error: failed at position 1: {"id". Expected one of: SELECT.']]);
    expect(probes(), 'each failed insert asked the store').to.be.greaterThan(0);
  });

  // Found in review: a one-event batch whose insert timed out once, the store answering the probe, was dead-lettered (and often stored too).
  it('stores an event whose insert timed out once while the store took the known-good write, instead of dead-lettering it', async () => {
    const stored: string[] = [];
    let timeouts = 1;
    const store: EventStore = {
      async insertEvents(events) {
        if (timeouts > 0) {
          timeouts -= 1;
          throw toStoreError(new Error('Timeout error.'), 'insert');
        }
        stored.push(...events.map((e) => e.event.id));
      },
      async probeWrite() {},
      ...NO_READS,
    };
    const event = canonicalEvent();
    const result = await createEventIngestor({ store, schemas }).ingestMessages([raw(event)]);
    expect(result.rejected).to.deep.equal([]);
    expect(stored).to.deep.equal([event.id]);
  });

  it('dead-letters a row the store refuses for a listed reason on its first insert alone, without a second', async () => {
    const { store, state } = constrainedStore();
    const result = await createEventIngestor({ store, schemas }).ingestMessages([raw(canonicalEvent({ entity: 'poison' }))]);
    expect(result.rejected.map((r) => r.reason)).to.deep.equal(['store-rejected']);
    expect(state.inserts, 'a constraint is the row, not the moment').to.equal(1);
  });

  it('waits for a store that fails in a way no list names and does not take the known-good write either', async () => {
    const { store, stored } = unlistedFailureStore(async () => {
      throw toStoreError(new Error('Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)'), 'insert');
    });
    let error: unknown;
    const result = await createEventIngestor({ store, schemas })
      .ingestMessages([raw(canonicalEvent()), raw(canonicalEvent({ entity: 'framing' }))])
      .catch((e: unknown) => (error = e));
    expect(error, 'nothing is judged while the store cannot write').to.be.instanceOf(SickStoreError);
    expect(result).to.equal(error);
    expect(stored).to.deep.equal([]);
  });

  it('splits a batch whose body our own code could not build, and stores all of it', async () => {
    const stored: string[] = [];
    const store: EventStore = {
      async insertEvents(events) {
        // What Buffer.allocUnsafe throws for a body over the largest Buffer: a RangeError with a system code.
        if (events.length > 8) throw toStoreError(Object.assign(new RangeError('The value of "size" is out of range.'), { code: 'ERR_OUT_OF_RANGE' }), 'insert');
        stored.push(...events.map((e) => e.event.id));
      },
      async probeWrite() {},
      ...NO_READS,
    };
    const events = Array.from({ length: 40 }, () => canonicalEvent());
    const result = await createEventIngestor({ store, schemas }).ingestMessages(events.map(raw));
    expect(result.rejected).to.deep.equal([]);
    expect(stored.sort()).to.deep.equal(events.map((e) => e.id).sort());
  });

  it('rejects the whole batch when the store fails, so nothing is acknowledged', async () => {
    const { store } = memoryStore(true);
    let error: unknown;
    await createEventIngestor({ store, schemas }).ingestMessages([raw(canonicalEvent())]).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(SickStoreError);
    expect(((error as Error).cause as Error).message, 'the store\'s own error is kept as the cause').to.equal('store down');
  });

  it('dead-letters an event the store refuses on its own, with every copy of it, and stores its neighbours', async () => {
    const { store, stored } = constrainedStore();
    const good = Array.from({ length: 40 }, () => canonicalEvent());
    const poison = canonicalEvent({ entity: 'poison' });
    const messages = [...good.slice(0, 20).map(raw), raw(poison), raw('{not json'), ...good.slice(20).map(raw), raw(poison)];
    const result = await createEventIngestor({ store, schemas }).ingestMessages(messages);
    expect(stored.sort()).to.deep.equal(good.map((e) => e.id).sort());
    expect(result.stored).to.equal(40);
    // In the order the messages came, validation and store refusals alike.
    expect(result.rejected.map((r) => [r.message, r.reason])).to.deep.equal([
      [messages[20], 'store-rejected'],
      [messages[21], 'invalid-json'],
      [messages[42], 'store-rejected'],
    ]);
    expect(result.rejected[0]!.detail).to.equal(
      "VIOLATED_CONSTRAINT (469): Constraint `no_poison` for table default.events is violated at row 1. Expression: (entity != 'poison').",
    );
  });

  it('dead-letters every copy of an event refused both as its own bytes and encoded again', async () => {
    const { store, stored, state } = constrainedStore();
    const good = Array.from({ length: 6 }, () => canonicalEvent());
    const poison = canonicalEvent({ entity: 'poison' });
    const bytes = (e: CanonicalEvent) => ({ value: Buffer.from(JSON.stringify(e)) });
    const messages = [bytes(poison), ...good.map(bytes), bytes(poison)];
    const result = await createEventIngestor({ store, schemas }).ingestMessages(messages);
    expect(stored.sort()).to.deep.equal(good.map((e) => e.id).sort());
    expect(result.rejected.map((r) => [r.message, r.reason])).to.deep.equal([
      [messages[0], 'store-rejected'],
      [messages[7], 'store-rejected'],
    ]);
    // The bisection, then one more insert of the refused event encoded, which the store refused too.
    expect(state.inserts).to.be.greaterThan(2);
  });

  it('reads events that arrive as bytes as it reads them as text: the events stored, the refusals and their reasons', async () => {
    const good = Array.from({ length: 12 }, () => canonicalEvent());
    const texts = [...good.slice(0, 6), canonicalEvent({ entity: 'poison' }), ...good.slice(6)].map((e) => JSON.stringify(e));
    texts.splice(3, 0, JSON.stringify({ ...good[0], extra: 1 }), '{"id":');
    const asText = constrainedStore();
    const asBytes = constrainedStore();
    const fromText = await createEventIngestor({ store: asText.store, schemas }).ingestMessages(texts.map((value) => ({ value })));
    const fromBytes = await createEventIngestor({ store: asBytes.store, schemas }).ingestMessages(texts.map((value) => ({ value: Buffer.from(value) })));
    expect(asBytes.stored.sort()).to.deep.equal(good.map((e) => e.id).sort());
    expect(asBytes.stored).to.deep.equal(asText.stored.sort());
    expect(fromBytes.rejected.map((r) => r.reason)).to.deep.equal(['schema-violation', 'invalid-json', 'store-rejected']);
    expect(fromBytes.rejected.map((r) => [r.reason, r.detail])).to.deep.equal(fromText.rejected.map((r) => [r.reason, r.detail]));

    // What the store is handed as the event is the event sent, though the bytes were never parsed for validation.
    const { store, batches } = memoryStore();
    await createEventIngestor({ store, schemas }).ingestMessages(good.map((e) => ({ value: Buffer.from(JSON.stringify(e)) })));
    expect(batches).to.deep.equal([good]);
  });

  it('dead-letters nothing and rejects the batch when the store falls sick while it looks for the refused event', async () => {
    // Sick from the third insert on: the search has begun, and has not reached the poison.
    const { store, state, stored } = constrainedStore({ sickFromInsert: 3 });
    const ingestor = createEventIngestor({ store, schemas });
    const messages = [...Array.from({ length: 30 }, () => raw(canonicalEvent())), raw(canonicalEvent({ entity: 'poison' }))];
    let error: unknown;
    const result = await ingestor.ingestMessages(messages).catch((e: unknown) => {
      error = e;
      return undefined;
    });
    expect(result).to.equal(undefined);
    expect(error).to.be.instanceOf(SickStoreError);
    expect((error as Error).cause).to.deep.include({ code: 'UPSTREAM_UNAVAILABLE' });
    expect(state.inserts).to.equal(3);
    // The left half stored before the store fell sick; the retried batch stores it again, and the store folds the copies.
    expect(stored).to.have.length(16);
  });

  it('throws for an invalid event built in-process', async () => {
    const { store } = memoryStore();
    let error: unknown;
    await createEventIngestor({ store, schemas }).ingestEvents([{ ...canonicalEvent(), domain: '' }]).catch((e: unknown) => (error = e));
    expect((error as Error).message).to.match(/invalid canonical event/);
  });

  it('stores the event derived from each command, with the trace of its traceparent header', async () => {
    const { store, batches } = memoryStore();
    const enrollment = enrollmentCommand();
    const edge = edgePolicyCommand();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const result = await createEventIngestor({ store, schemas }).ingestMessages([
      { format: 'enrollment-command', value: JSON.stringify(enrollment), headers: { traceparent: Buffer.from(traceparent) } },
      { format: 'edge-policy-command', value: JSON.stringify(edge) },
      // A redelivered command folds into the same event.
      { format: 'enrollment-command', value: JSON.stringify(enrollment) },
    ]);
    expect(result).to.deep.equal({ stored: 3, rejected: [] });
    expect(batches).to.deep.equal([[commandEvent(enrollment, traceparent), commandEvent(edge, undefined)]]);
    expect(batches[0]![0]!.trace_id).to.equal('0af7651916cd43dd8448eb211c80319c');
  });

  it('rejects a command that breaks its schema, and does not read an event as a command', async () => {
    const { store, batches } = memoryStore();
    const result = await createEventIngestor({ store, schemas }).ingestMessages([
      { format: 'enrollment-command', value: JSON.stringify({ ...enrollmentCommand(), device_id: 'not-a-uuid' }) },
      { format: 'edge-policy-command', value: JSON.stringify(canonicalEvent()) },
      { format: 'enrollment-command', value: JSON.stringify(enrollmentCommand({ requested_at: '1800-01-01T00:00:00Z' })) },
    ]);
    expect(result.rejected.map((r) => r.reason)).to.deep.equal(['schema-violation', 'schema-violation', 'timestamp-out-of-range']);
    expect(result.rejected[0]!.detail).to.match(/device_id must match format "uuid"/);
    expect(batches).to.deep.equal([]);
  });
});
