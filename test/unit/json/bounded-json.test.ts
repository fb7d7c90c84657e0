import { expect } from 'chai';
import fc from 'fast-check';
import { MAX_JSON_DEPTH, readBoundedJson, type JsonProblem } from '../../../src/json/bounded-json.js';

/** The rules applied the slow way, member by member, to every text: what the fast path must agree with. */
function strictReading(text: string): { ok: true; value: unknown } | { ok: false; problem: JsonProblem } {
  let depthExceeded = false;
  let problem: JsonProblem | undefined;
  let value: unknown;
  try {
    value = JSON.parse(text, (key, v: unknown) => {
      if (key === '__proto__') problem ??= 'proto-key';
      if (typeof v === 'number' && !Number.isFinite(v)) problem ??= 'number-out-of-range';
      return v;
    });
  } catch {
    return { ok: false, problem: 'not-json' };
  }
  const depth = (v: unknown): number =>
    typeof v === 'object' && v !== null ? 1 + Math.max(0, ...Object.values(v as Record<string, unknown>).map(depth)) : 0;
  if (depth(value) > MAX_JSON_DEPTH) depthExceeded = true;
  if (depthExceeded) return { ok: false, problem: 'too-deep' };
  return problem === undefined ? { ok: true, value } : { ok: false, problem };
}

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('bounded JSON reading (HTTP bodies and Kafka messages alike)', () => {
  it('names each problem', () => {
    const cases: [string, JsonProblem][] = [
      ['{"a":', 'not-json'],
      [nested(MAX_JSON_DEPTH + 1), 'too-deep'],
      [nested(20_000), 'too-deep'],
      ['{"a":{"__proto__":1}}', 'proto-key'],
      ['{"\\u005f_proto__":1}', 'proto-key'],
      ['{"a":[1E+400]}', 'number-out-of-range'],
      // No exponent: 400 digits are beyond a double too.
      [`{"a":1${'0'.repeat(400)}}`, 'number-out-of-range'],
    ];
    for (const [text, problem] of cases) {
      const reading = readBoundedJson(text);
      expect(reading.ok, text.slice(0, 40)).to.equal(false);
      if (!reading.ok) expect(reading.problem, text.slice(0, 40)).to.equal(problem);
    }
  });

  it('reads nesting up to the limit, and strings that merely look deep or hostile', () => {
    expect(readBoundedJson(nested(MAX_JSON_DEPTH)).ok).to.equal(true);
    expect(readBoundedJson(`{"text":"${'['.repeat(500)} __proto__ 1e400"}`)).to.deep.equal({
      ok: true,
      value: { text: `${'['.repeat(500)} __proto__ 1e400` },
    });
  });

  it('reads many shallow brackets, and counts only those outside strings when there are many', () => {
    const wide = JSON.stringify({ list: Array.from({ length: 200 }, (_, i) => ({ i, tags: [i] })) });
    expect(readBoundedJson(wide).ok).to.equal(true);
    const deepInStrings = JSON.stringify({ a: Array.from({ length: 50 }, () => '{[') });
    expect(readBoundedJson(deepInStrings).ok).to.equal(true);
    expect(readBoundedJson(`{"s":"${'{'.repeat(40)}","v":${nested(MAX_JSON_DEPTH)}}`)).to.include({ ok: false, problem: 'too-deep' });
  });

  it('agrees with the rules applied member by member, on any JSON and on text near it', () => {
    const text = fc.oneof(
      fc.json({ depthSize: 'medium' }),
      fc.json().map((t) => t.replace(/[0-9]+(?=[,\]}]|$)/, '9e999')),
      fc.json().map((t) => t.replace(/"[^"]*":/, '"__proto__":')),
      fc.string(),
    );
    fc.assert(
      fc.property(text, (t) => {
        const reading = readBoundedJson(t);
        expect(reading.ok ? reading : { ok: false, problem: reading.problem }).to.deep.equal(strictReading(t));
      }),
      { numRuns: 2000 },
    );
  });
});
