import { expect } from 'chai';
import { AppError } from '../../../src/errors.js';
import { toErrorResponse } from '../../../src/http/error-response.js';

describe('error response mapping', () => {
  it('lists fields as the message of a validation failure', () => {
    const res = toErrorResponse(new AppError('VALIDATION_FAILED', 'Request validation failed', { fields: { 'query.limit': 'must be integer' }, detail: 'query.limit must be integer' }));
    expect(res).to.deep.equal({ status: 400, body: { ok: 0, message: { 'query.limit': 'must be integer' }, detail: 'query.limit must be integer' }, headers: {} });
  });

  it('adds WWW-Authenticate to a 401 and Retry-After to a 503', () => {
    expect(toErrorResponse(new AppError('UNAUTHENTICATED', 'Unauthorized')).headers).to.have.property('WWW-Authenticate');
    expect(toErrorResponse(new AppError('UPSTREAM_UNAVAILABLE', 'down')).headers).to.deep.equal({ 'Retry-After': '1' });
  });

  it('maps body-parser errors by their type', () => {
    expect(toErrorResponse(Object.assign(new Error('too big'), { type: 'entity.too.large', status: 413 })).status).to.equal(413);
    expect(toErrorResponse(Object.assign(new SyntaxError('Unexpected token'), { status: 400 })).body.message).to.equal('Malformed JSON');
    expect(toErrorResponse(Object.assign(new Error('x'), { type: 'encoding.unsupported' })).status).to.equal(415);
  });

  it('answers anything else with a 500 that reveals nothing', () => {
    const res = toErrorResponse(new Error('SELECT * FROM secrets failed at /srv/app.ts:12'));
    expect(res).to.deep.equal({ status: 500, body: { ok: 0, message: 'Internal error', detail: 'Internal error.' }, headers: {} });
  });
});
