import { expect } from 'chai';
import { schemasById } from '../../../src/schemas/schema-files.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';

const schemas = createSchemaRegistry();

describe('live-tail query schema', () => {
  it('takes exactly the filters of the feed, with the same rules', () => {
    const feed = schemasById['events-query.schema.json'].properties;
    const stream = schemasById['events-stream-query.schema.json'].properties;
    expect(Object.keys(stream)).to.deep.equal(['domain', 'entity', 'action', 'device_id', 'fleet_id']);
    for (const [name, rule] of Object.entries(stream)) expect(rule, name).to.deep.equal(feed[name as keyof typeof feed]);
  });

  it('refuses the paging parameters of the feed, naming each', () => {
    const result = schemas.check('events-stream-query.schema.json', { cursor: 'c', limit: '5', since: 'x', until: 'y', domain: 'devices' }, 'query');
    expect(result).to.deep.equal({
      ok: false,
      fields: { 'query.cursor': 'is not allowed', 'query.limit': 'is not allowed', 'query.since': 'is not allowed', 'query.until': 'is not allowed' },
    });
  });
});
