import { expect } from 'chai';
import { EraseUsageError, parseEraseArguments } from '../../../src/erasure/erase-arguments.js';

const ORG = '0b5e7e5c-4d2e-4c59-9d1e-0a9a7b1c2d3e';
const DEVICE = '2D7A9A7E-6F4A-4E7B-9F3A-2C1C9D3E4F5A';

describe('npm run erase arguments', () => {
  it('takes an organization, a device within it, who asked and why', () => {
    expect(parseEraseArguments(['--org', ORG, '--device', DEVICE, '--requested-by', ' ops:alice ', '--reason', 'ticket 42'])).to.deep.equal({
      kind: 'erase',
      scope: { orgId: ORG, projectId: undefined, deviceId: DEVICE.toLowerCase() },
      requestedBy: 'ops:alice',
      reason: 'ticket 42',
    });
  });

  for (const [args, problem] of [
    [['--requested-by', 'a'], /--org is required/],
    [['--org', ORG], /--requested-by is required/],
    [['--org', ORG, '--requested-by', '  '], /--requested-by is required/],
    [['--org', 'acme', '--requested-by', 'a'], /not a UUID/],
    [['--org', ORG, '--project', "x' OR 1=1", '--requested-by', 'a'], /--project: .* is not a UUID/],
    [['--org', ORG, '--requested-by', 'a', 'extra'], /positional/i],
    [['--org', ORG, '--requested-by', 'a', '--everything'], /Unknown option/],
  ] as const) {
    it(`refuses ${args.join(' ')}`, () => {
      expect(() => parseEraseArguments(args)).to.throw(EraseUsageError, problem);
    });
  }
});
