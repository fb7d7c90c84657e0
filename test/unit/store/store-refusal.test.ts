import { expect } from 'chai';
import { ClickHouseError } from '@clickhouse/client';
import { toStoreError } from '../../../src/store/store-errors.js';
import { describeRefusal, rowRefusal } from '../../../src/store/store-refusal.js';

// The texts below are what each transport gave for real failures (ClickHouse 26.7), as the
// transports hand them on: wrapped by toStoreError, the engine's error kept as the cause.
const CONSTRAINT = "Constraint `poison` for table default.t (08121b53-3e25-4938-8eb1-a1e0554ae0e5) is violated at row 2. Expression: (entity != 'bad'). Column values: entity = 'bad'.";

/** @clickhouse/client: the code as a digit string, the name as `type`, the text without the code prefix. */
const serverError = (code: string, type: string, message: string) => toStoreError(new ClickHouseError({ message, code, type }), 'insert');

/** chDB: the code as `clickhouseCode` on insert errors, and always at the head of the text, the name at its end. */
const chdbError = (code: number, name: string, message: string, withField = true) =>
  toStoreError(
    Object.assign(new Error(`Code: ${code}. DB::Exception: ${message} (${name})`), {
      name: 'ChdbInsertError',
      code: 'CHDB_INSERT',
      ...(withField ? { clickhouseCode: code } : {}),
    }),
    'insert',
  );

const networkError = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

describe('store refusal', () => {
  for (const [what, error] of [
    ['the server', serverError('469', 'VIOLATED_CONSTRAINT', `${CONSTRAINT} `)],
    ['chDB', chdbError(469, 'VIOLATED_CONSTRAINT', CONSTRAINT)],
    ['chDB when the code is only in its text', chdbError(469, 'VIOLATED_CONSTRAINT', CONSTRAINT, false)],
  ] as const) {
    it(`reads a violated constraint from ${what} as a refusal of the rows, with the engine's sentence alone`, () => {
      const refusal = rowRefusal(error);
      expect(refusal).to.deep.equal({ code: 469, name: 'VIOLATED_CONSTRAINT', message: CONSTRAINT });
      expect(describeRefusal(refusal!)).to.equal(`VIOLATED_CONSTRAINT (469): ${CONSTRAINT}`);
    });
  }

  it('reads values that do not parse as refusals, without the pipeline trace', () => {
    const uuid = 'Cannot parse UUID from String: invalid format, expected 32 hexadecimal digits: (while reading the value of key u): (at row 1)';
    for (const error of [
      serverError('376', 'CANNOT_PARSE_UUID', `${uuid}\n: While executing ParallelParsingBlockInputFormat. `),
      chdbError(376, 'CANNOT_PARSE_UUID', `${uuid}\n: While executing ParallelParsingBlockInputFormat.`),
    ]) {
      expect(rowRefusal(error)).to.deep.equal({ code: 376, name: 'CANNOT_PARSE_UUID', message: uuid });
    }
    expect(rowRefusal(serverError('41', 'CANNOT_PARSE_DATETIME', 'Cannot read DateTime: unexpected word: (at row 1)\n: While executing'))?.name).to.equal('CANNOT_PARSE_DATETIME');
    expect(rowRefusal(chdbError(27, 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', "Cannot parse input: expected '\"' before: 'x'"))?.code).to.equal(27);
  });

  it('keeps statement text out and bounds the sentence', () => {
    const refusal = rowRefusal(serverError('117', 'INCORRECT_DATA', `${'v'.repeat(2000)} (in query: INSERT INTO events FORMAT JSONEachRow)`));
    expect(refusal!.message).to.have.length(500);
    expect(refusal!.message).not.to.include('INSERT');
    expect(rowRefusal(serverError('6', 'CANNOT_PARSE_TEXT', 'Cannot parse text (in query: INSERT INTO events FORMAT JSONEachRow)'))!.message).to.equal('Cannot parse text');
  });

  it('reads a failure of encoding the rows in this process, with no store or system code, as a refusal of the rows', () => {
    for (const [error, name, message] of [
      [toStoreError(new RangeError('Maximum call stack size exceeded'), 'insert'), 'RangeError', 'Maximum call stack size exceeded'],
      [new RangeError('Invalid string length'), 'RangeError', 'Invalid string length'],
      [toStoreError(new TypeError('Do not know how to serialize a BigInt'), 'insert'), 'TypeError', 'Do not know how to serialize a BigInt'],
    ] as const) {
      const refusal = rowRefusal(error);
      expect(refusal).to.deep.equal({ code: undefined, name, message });
      expect(describeRefusal(refusal!)).to.equal(`${name} while encoding the row: ${message}`);
    }
  });

  for (const [what, error] of [
    ['a language error that carries a system code (I/O, not the rows)', toStoreError(Object.assign(new TypeError('fetch failed'), { code: 'UND_ERR_SOCKET' }), 'insert')],
    ['a language error with a cause (raised around I/O)', toStoreError(new TypeError('fetch failed', { cause: networkError('ECONNRESET') }), 'insert')],
    ['a refused connection', toStoreError(networkError('ECONNREFUSED'), 'insert')],
    ['the client request timeout', toStoreError(new Error('Timeout error.'), 'insert')],
    ['UNKNOWN_TABLE (60)', serverError('60', 'UNKNOWN_TABLE', "Table default.events doesn't exist. ")],
    ['UNKNOWN_TABLE (60) from chDB', chdbError(60, 'UNKNOWN_TABLE', 'Table default.events does not exist.', false)],
    ['UNKNOWN_DATABASE (81)', serverError('81', 'UNKNOWN_DATABASE', 'Database test_x does not exist. ')],
    ['NO_SUCH_COLUMN_IN_TABLE (16)', serverError('16', 'NO_SUCH_COLUMN_IN_TABLE', 'No such column ingested_at in table events. ')],
    ['MEMORY_LIMIT_EXCEEDED (241)', chdbError(241, 'MEMORY_LIMIT_EXCEEDED', 'Memory limit (total) exceeded')],
    ['TOO_MANY_PARTS (252)', serverError('252', 'TOO_MANY_PARTS', 'Too many parts (300). Merges are processing significantly slower than inserts. ')],
    ['READONLY (164)', serverError('164', 'READONLY', 'Cannot execute query in readonly mode. ')],
    ['AUTHENTICATION_FAILED (516)', serverError('516', 'AUTHENTICATION_FAILED', 'default: Authentication failed. ')],
    ['STD_EXCEPTION (1001)', chdbError(1001, 'STD_EXCEPTION', 'std::exception')],
    ['an error with no ClickHouse code', new Error('socket hang up')],
    ['something thrown that is not an error', 'boom'],
  ] as const) {
    it(`reads ${what} as a sick store, not a refusal`, () => {
      expect(rowRefusal(error)).to.equal(undefined);
    });
  }
});
