import { expect } from 'chai';
import { eventMessage } from '../../../src/kafka/event-message.js';
import { canonicalEvent } from '../../support/factories.js';

describe('event message', () => {
  it('is keyed by device_id, with the schema headers', () => {
    const event = canonicalEvent();
    const message = eventMessage(event);
    expect(message.key).to.equal(event.device_id);
    expect(JSON.parse(String(message.value))).to.deep.equal(event);
    expect(message.headers).to.deep.equal({ 'content-type': 'application/json', schema: 'canonical-event.schema.json', 'schema-version': '1' });
  });

  it('falls back to project_id when there is no device', () => {
    const event = canonicalEvent({ device_id: null });
    expect(eventMessage(event).key).to.equal(event.project_id);
  });
});
