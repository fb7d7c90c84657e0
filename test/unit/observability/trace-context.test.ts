import { expect } from 'chai';
import { formatTraceparent, parseTraceparent } from '../../../src/observability/trace-context.js';

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
  it('formats a header that parses back to the same ids', () => {
    const trace = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
    expect(formatTraceparent(trace)).to.equal('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(parseTraceparent(formatTraceparent(trace))).to.deep.equal(trace);
  });
});
