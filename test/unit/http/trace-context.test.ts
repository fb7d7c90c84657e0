import { expect } from 'chai';
import { parseTraceparent } from '../../../src/http/trace-context.js';

describe('traceparent', () => {
  it('reads trace and parent ids', () => {
    expect(parseTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).to.deep.equal({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
    });
  });
  it('ignores absent, malformed and all-zero headers', () => {
    for (const h of [undefined, '', 'garbage', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331', `00-${'0'.repeat(32)}-b7ad6b7169203331-01`]) {
      expect(parseTraceparent(h)).to.equal(undefined);
    }
  });
});
