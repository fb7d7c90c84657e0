import { expect } from 'chai';
import { ClickHouseError } from '@clickhouse/client';
import { isKeeperFailure, isKeeperKeyTaken, isKeeperMapUnavailable, toStoreError } from '../../../src/store/store-errors.js';

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
    ['a dead shard behind a Distributed read (279)', new ClickHouseError({ message: 'All connection tries failed', code: '279', type: 'ALL_CONNECTION_TRIES_FAILED' })],
    ['a Keeper connection loss (999)', new ClickHouseError({ message: 'Coordination error: Connection loss', code: '999', type: 'KEEPER_EXCEPTION' })],
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

  describe('Keeper answers', () => {
    const nodeExists = new ClickHouseError({ message: 'Transaction failed (Node exists): Op #0, path: /keeper_map_tables/x', code: '999', type: 'KEEPER_EXCEPTION' });
    const connectionLoss = new ClickHouseError({ message: 'Coordination error: Connection loss', code: '999', type: 'KEEPER_EXCEPTION' });
    const noPrefix = new ClickHouseError({ message: "KeeperMap is disabled because 'keeper_map_path_prefix' config is not defined", code: '36', type: 'BAD_ARGUMENTS' });

    it('reads a refused insert-if-absent as the key taken, through our wrapping too', () => {
      expect(isKeeperKeyTaken(nodeExists)).to.equal(true);
      expect(isKeeperKeyTaken(toStoreError(nodeExists, 'command'))).to.equal(true);
      expect(isKeeperKeyTaken(connectionLoss)).to.equal(false);
    });

    it('reads any Keeper exception as a Keeper failure, and nothing else', () => {
      expect(isKeeperFailure(connectionLoss)).to.equal(true);
      expect(isKeeperFailure(noPrefix)).to.equal(false);
      expect(isKeeperFailure(networkError('ECONNREFUSED'))).to.equal(false);
    });

    it('reads a server without keeper_map_path_prefix or without Keeper as KeeperMap unavailable', () => {
      expect(isKeeperMapUnavailable(toStoreError(noPrefix, 'command'))).to.equal(true);
      expect(isKeeperMapUnavailable(new ClickHouseError({ message: 'Cannot use ZooKeeper', code: '225', type: 'NO_ZOOKEEPER' }))).to.equal(true);
      expect(isKeeperMapUnavailable(new ClickHouseError({ message: 'Syntax error', code: '62', type: 'SYNTAX_ERROR' }))).to.equal(false);
      expect(isKeeperMapUnavailable(connectionLoss)).to.equal(false);
    });
  });
});
