import { expect } from 'chai';
import { erasureId, normalizedScope, scopeCondition, scopeCovers } from '../../../src/store/erasure-scope.js';
import { parseErasure } from '../../../src/store/erasure-settings.js';
import { isUuid } from '../../../src/ids/uuid.js';

const ORG = '0B5E7E5C-4D2E-4C59-9D1E-0A9A7B1C2D3E';
const PROJECT = '1c6f8f6d-5e3f-4d6a-8e2f-1b0b8c2d3e4f';
const DEVICE = '2d7a9a7e-6f4a-4e7b-9f3a-2c1c9d3e4f5a';
const OTHER = '3e8bab8f-7a5b-4f8c-8a4b-3d2dae4f5a6b';

describe('erasure scope', () => {
  it('names the same scope with the same id, whatever the case of its ids, and other scopes with others', () => {
    const id = erasureId({ orgId: ORG });
    expect(isUuid(id)).to.equal(true);
    expect(erasureId({ orgId: ORG.toLowerCase() })).to.equal(id);
    const ids = [id, erasureId({ orgId: ORG, projectId: PROJECT }), erasureId({ orgId: ORG, deviceId: DEVICE }), erasureId({ orgId: ORG, projectId: PROJECT, deviceId: DEVICE })];
    expect(new Set(ids).size).to.equal(4);
  });

  it('gives each erasure of one scope its own id, the first keeping the id records written before repeated erasures carry', () => {
    const scope = { orgId: ORG, projectId: PROJECT };
    // What erasureId answered when a scope had one erasure only: an existing record stays its scope's first.
    expect(erasureId(scope)).to.equal('65eba71c-3969-8cfd-bd90-3a12caa7ace6');
    expect(erasureId(scope, 1)).to.equal(erasureId(scope));
    const ids = [1, 2, 3, 10].map((n) => erasureId(scope, n));
    expect(new Set(ids).size).to.equal(4);
    expect(ids.every(isUuid)).to.equal(true);
    expect(erasureId({ orgId: ORG.toLowerCase(), projectId: PROJECT }, 2)).to.equal(ids[1]);
    expect(erasureId({ orgId: ORG }, 2)).to.not.equal(ids[1]);
    expect(() => erasureId(scope, 0)).to.throw(RangeError);
  });

  it('covers the events of its organization, project and device, and no other', () => {
    const event = { org_id: ORG, project_id: PROJECT, device_id: DEVICE };
    const org = normalizedScope({ orgId: ORG });
    expect(scopeCovers(org, event)).to.equal(true);
    expect(scopeCovers(normalizedScope({ orgId: ORG, projectId: PROJECT }), event)).to.equal(true);
    expect(scopeCovers(normalizedScope({ orgId: ORG, projectId: OTHER }), event)).to.equal(false);
    expect(scopeCovers(normalizedScope({ orgId: ORG, deviceId: DEVICE }), event)).to.equal(true);
    expect(scopeCovers(normalizedScope({ orgId: ORG, deviceId: DEVICE }), { ...event, device_id: null })).to.equal(false);
    expect(scopeCovers(normalizedScope({ orgId: ORG, projectId: OTHER, deviceId: DEVICE }), event)).to.equal(false);
    expect(scopeCovers(normalizedScope({ orgId: OTHER }), event)).to.equal(false);
  });

  it('binds every id of the scope as a parameter, lower-case', () => {
    expect(scopeCondition({ orgId: ORG, deviceId: DEVICE })).to.deep.equal({
      where: 'org_id = {erase_org:UUID} AND device_id = {erase_device:UUID}',
      params: { erase_org: ORG.toLowerCase(), erase_device: DEVICE },
    });
  });

  it('reads ERASURE_POLL_MS and ERASURE_SUPPRESS_DAYS, 5 s and 30 days unless set, and refuses a value out of range', () => {
    expect(parseErasure({})).to.deep.equal({ pollMs: 5000, suppressDays: 30 });
    expect(parseErasure({ ERASURE_POLL_MS: '250', ERASURE_SUPPRESS_DAYS: '90' })).to.deep.equal({ pollMs: 250, suppressDays: 90 });
    expect(() => parseErasure({ ERASURE_SUPPRESS_DAYS: '0' })).to.throw(/ERASURE_SUPPRESS_DAYS/);
    expect(() => parseErasure({ ERASURE_POLL_MS: '5' })).to.throw(/ERASURE_POLL_MS/);
  });
});
