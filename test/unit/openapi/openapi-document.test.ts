import SwaggerParser from '@apidevtools/swagger-parser';
import { expect } from 'chai';
import type { OpenAPIV3_1 } from 'openapi-types';
import { openApiDocument } from '../../../src/openapi/openapi-document.js';
import { schemasById } from '../../../src/schemas/schema-files.js';

const document = () => openApiDocument() as unknown as OpenAPIV3_1.Document;

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document whose references all resolve', async () => {
    const validated = await SwaggerParser.validate(document());
    expect(validated).to.have.property('openapi', '3.1.0');
  });

  it('carries, under their titles, exactly the schemas of schemas/ that its operations reference, and no Kafka message', () => {
    const doc = document();
    const names = Object.keys(doc.components!.schemas!);
    const referenced = new Set([...JSON.stringify(doc).matchAll(/"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]));
    expect([...referenced].sort()).to.deep.equal([...names].sort());
    for (const name of names) expect(doc.components!.schemas![name], name).to.deep.include({ title: name });
    const titles = new Set(Object.values(schemasById).map((s) => s.title));
    expect(names.filter((name) => !titles.has(name))).to.deep.equal([]);
    expect(names).to.include.members(['CanonicalEventPageResponse', 'CanonicalEvent', 'EnrollmentRequest', 'EdgePolicyPatch', 'ErrorEnvelope']);
    expect(names).to.not.include.members(['EnrollmentCommand']);
    expect(names).to.not.include.members(['EdgePolicyCommand']);
  });

  it('tags every operation with a tag it declares, and names its contact and licence', () => {
    const doc = document();
    const declared = doc.tags!.map((t) => t.name);
    for (const [path, item] of Object.entries(doc.paths!)) {
      for (const operation of [item!.get, item!.post, item!.patch].filter((o) => o !== undefined)) {
        expect(operation.tags, path).to.have.length.greaterThan(0);
        expect(declared, path).to.include.members(operation.tags!);
      }
    }
    expect(doc.info.contact).to.have.property('name');
    expect(doc.info.license).to.have.property('name');
  });

  it('declares every path parameter, both credentials, and the error envelope for every error status', () => {
    const doc = document();
    expect(doc.components!.securitySchemes).to.deep.equal({
      bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      orgId: { type: 'apiKey', in: 'header', name: 'ORG-ID', description: 'The organization (uuid) the request acts for.' },
    });
    for (const [path, item] of Object.entries(doc.paths!)) {
      for (const operation of [item!.get, item!.post, item!.patch].filter((o) => o !== undefined)) {
        const declared = (operation.parameters as OpenAPIV3_1.ParameterObject[]).filter((p) => p.in === 'path').map((p) => p.name);
        expect(declared, path).to.deep.equal([...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
        for (const [status, response] of Object.entries(operation.responses)) {
          if (Number(status) < 400) continue;
          expect((response as OpenAPIV3_1.ResponseObject).content!['application/json']!.schema, `${path} ${status}`).to.deep.equal({
            $ref: '#/components/schemas/ErrorEnvelope',
          });
        }
      }
    }
  });
});
