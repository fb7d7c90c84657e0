import { expect } from 'chai';
import { AppError } from '../../../src/errors/app-error.js';
import { allValid, createSchemaRegistry } from '../../../src/schemas/schema-registry.js';

const schemas = createSchemaRegistry();

describe('schema registry', () => {
  it('coerces query strings but not bodies', () => {
    expect(schemas.check('events-query.schema.json', { limit: '5' }, 'query')).to.deep.equal({ ok: true, value: { limit: 5 } });
    expect(schemas.check('enrollment-request.schema.json', { display_name: 5 }, 'body').ok).to.equal(false);
  });

  // AJV alone coerces whatever Number() reads: limit=%20 was a page of 1, limit=0x1F a page of 31.
  it('takes a query integer only in decimal digits', () => {
    for (const good of ['0', '-3', '200', '00050', '99999999999999999999']) {
      expect(schemas.check('events-query.schema.json', { limit: good }, 'query').ok, good).to.equal(true);
    }
    for (const bad of [' ', '', '0x1F', '1e2', '\t5', '5 ', '+5', '1.0', '1_000', 'Infinity']) {
      expect(schemas.check('events-query.schema.json', { limit: bad }, 'query'), JSON.stringify(bad)).to.deep.equal({ ok: false, fields: { 'query.limit': 'must be integer' } });
    }
    expect(schemas.check('events-query.schema.json', { limit: 5 }, 'body').ok).to.equal(true);
    expect(schemas.check('events-query.schema.json', { limit: '0x1F', foo: '1', device_id: 'nope' }, 'query'), 'every bad member named at once').to.deep.equal({
      ok: false,
      fields: { 'query.limit': 'must be integer', 'query.foo': 'is not allowed', 'query.device_id': 'must match format "uuid"' },
    });
  });

  it('names fields by location and path', () => {
    const result = schemas.check('enrollment-request.schema.json', { meta: 1, x: 2 }, 'body');
    expect(result).to.deep.equal({ ok: false, fields: { 'body.meta': 'must be object', 'body.x': 'is not allowed' } });
  });

  it('gathers the failures of every part into one error', () => {
    try {
      allValid(
        schemas.check('project-path.schema.json', { project_id: 'x' }, 'path'),
        schemas.check('events-query.schema.json', { limit: 'y' }, 'query'),
      );
      expect.fail('expected a validation error');
    } catch (error) {
      expect((error as AppError).code).to.equal('VALIDATION_FAILED');
      expect((error as AppError).fields).to.have.keys('path.project_id', 'query.limit');
    }
  });

  // Found by the fuzz suite: ajv-formats took "urn:uuid:<uuid>", and the store's UUID columns did not.
  it('takes a uuid only as its plain 36 characters, in either case', () => {
    const id = '0a1b2c3d-0000-4000-8000-00000000000f';
    expect(schemas.check('project-path.schema.json', { project_id: id }, 'path').ok).to.equal(true);
    expect(schemas.check('project-path.schema.json', { project_id: id.toUpperCase() }, 'path').ok).to.equal(true);
    for (const bad of [`urn:uuid:${id}`, `{${id}}`, id.replace(/-/g, '')]) {
      expect(schemas.check('project-path.schema.json', { project_id: bad }, 'path').ok, bad).to.equal(false);
    }
  });

  it('accepts every field of a full canonical event and rejects a missing one', () => {
    const event = {
      id: '11111111-1111-4111-8111-111111111111', org_id: '11111111-1111-4111-8111-111111111111', project_id: '11111111-1111-4111-8111-111111111111',
      domain: 'd', entity: 'e', action: 'a', occurred_at: '2026-01-01T00:00:00Z',
    };
    expect(schemas.check('canonical-event.schema.json', event).ok).to.equal(true);
    expect(schemas.check('canonical-event.schema.json', { ...event, occurred_at: 'yesterday' }).ok).to.equal(false);
  });
});
