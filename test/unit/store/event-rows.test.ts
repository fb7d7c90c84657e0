import { expect } from 'chai';
import { fromEventRow, toEventRow } from '../../../src/store/event-rows.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent } from '../../support/factories.js';

describe('event rows', () => {
  it('round-trips every field; the payload is written as its object and read back from its JSON text', () => {
    const event = canonicalEvent({
      occurred_at: '2026-03-04T05:06:07.890123Z',
      correlation_id: 'cccccccc-cccc-4ccc-8ccc-cccccccccccc',
      payload: { nested: { list: [1, 'two', null] } },
      span_id: 'b7ad6b7169203331',
      trace_id: '0af7651916cd43dd8448eb211c80319c',
    });
    const row = toEventRow(event, toStoreTimestamp(event.occurred_at));
    expect(row.payload).to.deep.equal({ nested: { list: [1, 'two', null] } });
    expect(row.occurred_at).to.equal('2026-03-04 05:06:07.890123');
    // The text the store keeps for the object, as a read returns it.
    const stored = { ...row, payload: '{"nested":{"list":[1,"two",null]}}' };
    expect(fromEventRow(stored)).to.deep.equal(event);
  });

  it('turns absent optional fields into nulls', () => {
    const { correlation_id, device_id, fleet_id, payload, source_service, span_id, trace_id, ...required } = canonicalEvent();
    const row = toEventRow({ ...required, occurred_at: '2026-01-01T00:00:00Z' }, '2026-01-01 00:00:00.000000');
    expect(row.payload).to.equal(null);
    const out = fromEventRow({ ...row, payload: null });
    expect(out).to.deep.include({ correlation_id: null, device_id: null, fleet_id: null, payload: null, source_service: null, span_id: null, trace_id: null });
    void [correlation_id, device_id, fleet_id, payload, source_service, span_id, trace_id];
  });

  it('lower-cases uuids so one id has one spelling', () => {
    const event = canonicalEvent({ id: 'AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA' });
    expect(toEventRow(event, toStoreTimestamp(event.occurred_at)).id).to.equal('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa');
  });
});
