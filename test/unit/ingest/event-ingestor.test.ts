import { expect } from 'chai';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { commandEvent } from '../../../src/commands/command-event.js';
import { createEventIngestor } from '../../../src/ingest/event-ingestor.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import type { EventStore } from '../../../src/store/event-store.js';
import { canonicalEvent, edgePolicyCommand, enrollmentCommand } from '../../support/factories.js';

function memoryStore(fail = false) {
  const batches: CanonicalEvent[][] = [];
  const store: EventStore = {
    async insertEvents(events) {
      if (fail) throw new Error('store down');
      batches.push([...events]);
    },
    async listEvents() {
      return [];
    },
  };
  return { store, batches };
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

  it('rejects the whole batch when the store fails, so nothing is acknowledged', async () => {
    const { store } = memoryStore(true);
    let error: unknown;
    await createEventIngestor({ store, schemas }).ingestMessages([raw(canonicalEvent())]).catch((e: unknown) => (error = e));
    expect((error as Error).message).to.equal('store down');
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
