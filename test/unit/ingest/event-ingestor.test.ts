import { expect } from 'chai';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { createEventIngestor } from '../../../src/ingest/event-ingestor.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import type { EventStore } from '../../../src/store/event-store.js';
import { canonicalEvent } from '../../support/factories.js';

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
});
