import type { JsonObject, JsonValue } from '../json/json-value.js';
import { schemasById, type SchemaId } from './schema-files.js';

/** Where both contract documents keep their schemas: OpenAPI and AsyncAPI name the same place. */
export const COMPONENT_REF_PREFIX = '#/components/schemas/';

export function titleOf(id: SchemaId): string {
  return (schemasById[id] as { title: string }).title;
}

const idByTitle = new Map(Object.keys(schemasById).map((id) => [titleOf(id as SchemaId), id as SchemaId]));

/** A reference to a schema of schemas/ as a component of the document. */
export const componentRef = (id: SchemaId): JsonObject => ({ $ref: `${COMPONENT_REF_PREFIX}${titleOf(id)}` });

/** A schema file, or part of one, as a component: no $schema or $id, and file references turned into component references. */
export function schemaComponent(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(schemaComponent);
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === '$schema' || key === '$id') continue;
    out[key] = key === '$ref' && typeof inner === 'string' ? componentRef(inner as SchemaId).$ref! : schemaComponent(inner);
  }
  return out;
}

function referencedIds(value: JsonValue, found: Set<SchemaId>): void {
  if (Array.isArray(value)) {
    for (const item of value) referencedIds(item, found);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, inner] of Object.entries(value)) {
    if (key === '$ref' && typeof inner === 'string' && inner.startsWith(COMPONENT_REF_PREFIX)) {
      const id = idByTitle.get(inner.slice(COMPONENT_REF_PREFIX.length));
      if (id === undefined) throw new Error(`${inner} names no schema of schemas/`);
      found.add(id);
    } else {
      referencedIds(inner, found);
    }
  }
}

/**
 * The components that `document` references, directly or through other components, and
 * no others: a linter counts a component nobody references as a mistake, and a schema
 * that belongs to the other contract (a Kafka message in OpenAPI) misleads its readers.
 */
export function referencedComponents(document: JsonValue): JsonObject {
  const found = new Set<SchemaId>();
  referencedIds(document, found);
  const visited = new Set<SchemaId>();
  const pending = [...found];
  while (pending.length > 0) {
    const id = pending.pop()!;
    if (visited.has(id)) continue;
    visited.add(id);
    const inner = new Set<SchemaId>();
    referencedIds(schemaComponent(schemasById[id] as JsonValue), inner);
    pending.push(...inner);
  }
  const components: JsonObject = {};
  for (const id of [...visited].sort()) components[titleOf(id)] = schemaComponent(schemasById[id] as JsonValue);
  return components;
}
