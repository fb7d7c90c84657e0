import { expect } from 'chai';
import { authorize, parseOrgIdHeader, principalFromClaims } from '../../../src/auth/principal.js';
import { AppError, type ErrorCode } from '../../../src/errors/app-error.js';

const ORG = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';

function failsWith(code: ErrorCode, fn: () => unknown, detail?: RegExp): void {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(AppError);
    expect((error as AppError).code).to.equal(code);
    if (detail) expect((error as AppError).detail).to.match(detail);
    return;
  }
  throw new Error(`expected ${code}`);
}

describe('principalFromClaims', () => {
  it('reads sub, org_ids and scope', () => {
    const p = principalFromClaims({ sub: 'u', org_ids: [ORG.toUpperCase()], scope: 'events:read  devices:enroll' });
    expect(p.subject).to.equal('u');
    expect([...p.orgIds]).to.deep.equal([ORG]);
    expect([...p.scopes]).to.deep.equal(['events:read', 'devices:enroll']);
  });

  it('reads a single org_id and an scp array, and unites them with the others', () => {
    const other = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';
    const p = principalFromClaims({ sub: 'u', org_id: other, org_ids: [ORG], scope: 'a', scp: ['b'] });
    expect([...p.orgIds].sort()).to.deep.equal([ORG, other]);
    expect([...p.scopes].sort()).to.deep.equal(['a', 'b']);
  });

  it('is a 401 without sub or with malformed claims', () => {
    failsWith('UNAUTHENTICATED', () => principalFromClaims({}), /sub/);
    failsWith('UNAUTHENTICATED', () => principalFromClaims({ sub: '' }), /sub/);
    failsWith('UNAUTHENTICATED', () => principalFromClaims({ sub: 'u', org_ids: ORG }), /org_ids/);
    failsWith('UNAUTHENTICATED', () => principalFromClaims({ sub: 'u', org_ids: [1] }), /org_ids/);
    failsWith('UNAUTHENTICATED', () => principalFromClaims({ sub: 'u', org_id: [ORG] }), /org_id/);
    failsWith('UNAUTHENTICATED', () => principalFromClaims({ sub: 'u', scope: ['a'] }), /scope/);
    failsWith('UNAUTHENTICATED', () => principalFromClaims({ sub: 'u', scp: 'a' }), /scp/);
  });
});

describe('parseOrgIdHeader', () => {
  it('normalizes a uuid', () => expect(parseOrgIdHeader(` ${ORG.toUpperCase()} `)).to.equal(ORG));
  it('is a 401 when missing, repeated or not a uuid', () => {
    failsWith('UNAUTHENTICATED', () => parseOrgIdHeader(undefined), /required/);
    failsWith('UNAUTHENTICATED', () => parseOrgIdHeader(''), /required/);
    failsWith('UNAUTHENTICATED', () => parseOrgIdHeader([ORG, ORG]), /one organization/);
    failsWith('UNAUTHENTICATED', () => parseOrgIdHeader('acme'), /one organization/);
  });
});

describe('authorize', () => {
  const principal = principalFromClaims({ sub: 'u', org_ids: [ORG], scope: 'events:read' });
  it('passes for a granted organization and permission', () => authorize(principal, ORG, 'events:read'));
  it('is a 403 for another organization', () =>
    failsWith('FORBIDDEN', () => authorize(principal, 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', 'events:read'), /organization/));
  it('is a 403 for a missing permission', () =>
    failsWith('FORBIDDEN', () => authorize(principal, ORG, 'devices:enroll'), /devices:enroll/));
});
