import { expect } from 'chai';
import { ClickHouseError } from '@clickhouse/client';
import { toStoreError } from '../../../src/store/store-errors.js';

const networkError = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

describe('store errors', () => {
  for (const [what, error] of [
    ['a refused connection', networkError('ECONNREFUSED')],
    ['a reset connection', networkError('ECONNRESET')],
    ['the client request timeout', new Error('Timeout error.')],
    ['a wrapped refused connection', new Error('fetch failed', { cause: networkError('ECONNREFUSED') })],
    ['TIMEOUT_EXCEEDED (159)', new ClickHouseError({ message: 'Timeout exceeded', code: '159', type: 'TIMEOUT_EXCEEDED' })],
    ['TOO_MANY_SIMULTANEOUS_QUERIES (202)', new ClickHouseError({ message: 'Too many', code: '202', type: 'TOO_MANY_SIMULTANEOUS_QUERIES' })],
    ['MEMORY_LIMIT_EXCEEDED (241)', new ClickHouseError({ message: 'Memory limit', code: '241', type: 'MEMORY_LIMIT_EXCEEDED' })],
    ['TOO_MANY_PARTS (252)', new ClickHouseError({ message: 'Too many parts', code: '252', type: 'TOO_MANY_PARTS' })],
    ["MEMORY_LIMIT_EXCEEDED (241) named only in chDB's text", new Error('Code: 241. DB::Exception: Memory limit (total) exceeded. (MEMORY_LIMIT_EXCEEDED)')],
  ] as const) {
    it(`reads ${what} as unavailable: 503, retriable, no vendor text`, () => {
      const mapped = toStoreError(error, 'query');
      expect(mapped).to.deep.include({ code: 'UPSTREAM_UNAVAILABLE', status: 503, retriable: true });
      expect(mapped.detail).to.equal('The event store is temporarily unavailable; retry shortly.');
      expect(mapped.cause).to.equal(error);
    });
  }

  for (const [what, error] of [
    ['UNKNOWN_TABLE (60)', new ClickHouseError({ message: "Table default.events doesn't exist", code: '60', type: 'UNKNOWN_TABLE' })],
    ['SYNTAX_ERROR (62)', new ClickHouseError({ message: 'Syntax error: SELECT', code: '62', type: 'SYNTAX_ERROR' })],
    ["UNKNOWN_TABLE (60) named only in chDB's text", new Error('Code: 60. DB::Exception: Table default.events does not exist. (UNKNOWN_TABLE)')],
    ['an unknown failure', new Error('something else')],
  ] as const) {
    it(`reads ${what} as internal: 500, with no SQL or vendor text in the detail`, () => {
      const mapped = toStoreError(error, 'query');
      expect(mapped).to.deep.include({ code: 'INTERNAL', status: 500, detail: 'Internal error.' });
    });
  }
});
