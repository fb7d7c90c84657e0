import { expect } from 'chai';
import { NIL_UUID, isUuid } from '../../../src/ids/uuid.js';

describe('uuid', () => {
  it('takes the hyphenated 36-character form in either case, the nil UUID included', () => {
    for (const id of ['0f8fad5b-d9cb-469f-a165-70867728950e', '0F8FAD5B-D9CB-469F-A165-70867728950E', NIL_UUID]) expect(isUuid(id), id).to.equal(true);
  });

  it('refuses every other spelling', () => {
    for (const id of [
      '',
      '0f8fad5bd9cb469fa16570867728950e',
      '{0f8fad5b-d9cb-469f-a165-70867728950e}',
      'urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e',
      '0f8fad5b-d9cb-469f-a165-70867728950',
      '0f8fad5b-d9cb-469f-a165-70867728950e0',
      '0f8fad5b-d9cb-469f-a165-70867728950g',
      ' 0f8fad5b-d9cb-469f-a165-70867728950e',
      '0f8fad5b-d9cb-469f-a165-70867728950e\n',
      '0f8fad5bd-9cb-469f-a165-70867728950e',
    ]) {
      expect(isUuid(id), JSON.stringify(id)).to.equal(false);
    }
  });
});
