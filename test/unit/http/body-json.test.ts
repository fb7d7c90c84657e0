import { expect } from 'chai';
import { AppError } from '../../../src/errors/app-error.js';
import { parseBodyJson } from '../../../src/http/json-body.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../src/json/bounded-json.js';

function refusal(text: string, maxDepth = MAX_JSON_DEPTH): AppError {
  try {
    parseBodyJson(text, maxDepth);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error(`expected ${text.slice(0, 40)} to be refused`);
}

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('request body JSON', () => {
  it('parses JSON up to the depth limit', () => {
    expect(parseBodyJson('{"a":[1,{"b":null}],"c":"x"}', MAX_JSON_DEPTH)).to.deep.equal({ a: [1, { b: null }], c: 'x' });
    expect(() => parseBodyJson(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).to.not.throw();
    expect(parseBodyJson(nested(4), 4)).to.deep.equal([[[[]]]]);
    expect(refusal(nested(5), 4).fields).to.deep.equal({ body: 'must not nest arrays and objects deeper than 4 levels' });
  });

  it('refuses deeper nesting as a body validation failure, however deep', () => {
    for (const depth of [MAX_JSON_DEPTH + 1, 30_000]) {
      const error = refusal(nested(depth));
      expect(error.code).to.equal('VALIDATION_FAILED');
      expect(error.fields).to.have.key('body');
    }
  });

  it('counts only brackets outside strings, escaped quotes included', () => {
    expect(nestsDeeperThan(`{"a":"${'['.repeat(100)}"}`, 2)).to.equal(false);
    expect(nestsDeeperThan(`{"a":"\\"${'{'.repeat(100)}"}`, 2)).to.equal(false);
    expect(nestsDeeperThan('{"a":"\\\\",[[[1]]]}', 3)).to.equal(true);
  });

  it('refuses a __proto__ key at any depth and in any spelling as malformed JSON', () => {
    for (const text of ['{"__proto__":{}}', '{"a":[{"__proto__":1}]}', '{"\\u005f_proto__":1}']) {
      expect(refusal(text).code, text).to.equal('MALFORMED_JSON');
    }
  });

  // Found by the fuzz suite: 1e400 parsed as Infinity and went on as null, a deletion in a merge patch.
  it('refuses numbers beyond a double instead of turning them into Infinity', () => {
    for (const text of ['{"a":1e400}', '[-1e400]', '1E+309']) {
      const error = refusal(text);
      expect(error.code, text).to.equal('VALIDATION_FAILED');
      expect(error.fields).to.have.key('body');
    }
    expect(parseBodyJson('[1e-400, 1.7976931348623157e308]', MAX_JSON_DEPTH)).to.deep.equal([0, 1.7976931348623157e308]);
  });

  it('calls anything that is not JSON malformed', () => {
    for (const text of ['{a:1}', '{"a":1,}', ' ', '{"a":', 'NaN']) expect(refusal(text).code, text).to.equal('MALFORMED_JSON');
  });
});
