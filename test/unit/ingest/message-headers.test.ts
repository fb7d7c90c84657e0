import { expect } from 'chai';
import { firstHeaderValues } from '../../../src/ingest/message-headers.js';
import { deadLetterMessage } from '../../../src/ingest/dead-letter.js';

describe('headers of a consumed message', () => {
  it('keeps the first value of a repeated header', () => {
    expect(firstHeaderValues({ trace: [Buffer.from('a'), Buffer.from('b')], single: 'x' })).to.deep.equal({ trace: Buffer.from('a'), single: 'x' });
  });

  // What kafkajs 2.2.4 decodes for one header named toString: a repeat of the inherited method.
  it('takes the value, not an inherited function, for a header named like a member of Object.prototype', () => {
    const inherited: unknown = Reflect.get(Object.prototype, 'toString');
    const decoded = { toString: [inherited, Buffer.from('v')] } as unknown as Parameters<typeof firstHeaderValues>[0];
    const headers = firstHeaderValues(decoded);
    expect(Object.entries(headers)).to.deep.equal([['toString', Buffer.from('v')]]);
    const letter = deadLetterMessage({ message: { value: 'x', headers }, reason: 'invalid-json', detail: 'd' });
    expect(Object.values(letter.headers ?? {}).every((v) => typeof v === 'string' || Buffer.isBuffer(v))).to.equal(true);
  });

  it('keeps a header named __proto__ as a header, and the result a plain object', () => {
    const decoded = JSON.parse('{"__proto__":"p","a":"b"}') as Parameters<typeof firstHeaderValues>[0];
    const headers = firstHeaderValues(decoded);
    expect(Object.keys(headers).sort()).to.deep.equal(['__proto__', 'a']);
    expect(Object.getPrototypeOf(headers)).to.equal(Object.prototype);
    const letter = deadLetterMessage({ message: { value: 'x', headers }, reason: 'invalid-json', detail: 'd' });
    expect(Object.keys(letter.headers ?? {})).to.include('__proto__');
  });

  it('drops a header with no value', () => {
    expect(firstHeaderValues({ gone: undefined, empty: [] as unknown as Buffer[] })).to.deep.equal({});
  });
});
