import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError, type FieldErrors } from '../errors/app-error.js';
import { UUID_PATTERN } from '../ids/uuid.js';
import { schemasById, type SchemaId, type SchemaTypes } from './schema-files.js';

// ajv-formats is CommonJS with a default export; under NodeNext it arrives one level deep.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Where a value came from, used to prefix field names in validation errors. */
export type ValueLocation = 'path' | 'query' | 'body' | 'message' | 'header';

export interface SchemaRegistry {
  /** The value typed by its schema, or the fields that failed (prefixed by location). Combine with allValid(). */
  check<K extends SchemaId>(id: K, value: unknown, location?: ValueLocation): CheckResult<SchemaTypes[K]>;
}

export type CheckResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly fields: FieldErrors };

type ValuesOf<R extends readonly CheckResult<unknown>[]> = { [K in keyof R]: R[K] extends CheckResult<infer V> ? V : never };

export function validationError(fields: FieldErrors): AppError {
  return new AppError('VALIDATION_FAILED', 'Request validation failed', {
    fields,
    detail: Object.entries(fields)
      .map(([k, v]) => `${k} ${v}`)
      .join('; '),
  });
}

/** The values of several checks, or one VALIDATION_FAILED listing every bad field of all of them. */
export function allValid<const R extends readonly CheckResult<unknown>[]>(...results: R): ValuesOf<R> {
  const fields: FieldErrors = {};
  for (const result of results) if (!result.ok) Object.assign(fields, result.fields);
  if (Object.keys(fields).length > 0) throw validationError(fields);
  return results.map((r) => (r as { value: unknown }).value) as ValuesOf<R>;
}

function createAjv(coerceTypes: boolean): Ajv {
  // Union types let one schema bound a JSON value of any type (edge-policy-value.schema.json).
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, coerceTypes, useDefaults: false });
  addFormats(ajv);
  // ajv-formats also takes "urn:uuid:<uuid>", which ClickHouse's UUID type refuses: such an id
  // passed validation and failed in the store with a 500. Ids here are the plain 36 characters.
  ajv.addFormat('uuid', UUID_PATTERN);
  for (const schema of Object.values(schemasById)) ajv.addSchema(schema);
  return ajv;
}

/**
 * AJV's coercion turns any string JavaScript's Number() reads into a number: " ", "0x1F",
 * "1e2", "\t5". A query or path integer is written in decimal digits, so anything else is
 * refused before coercion, as "must be integer" like any other value of the wrong type.
 */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/** The top-level members a schema types as integers, read from the schema itself. */
function integerMembers(schema: unknown): readonly string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(properties)
    .filter(([, member]) => member.type === 'integer')
    .map(([name]) => name);
}

/** The members typed as integers whose value is text but not decimal digits. */
function notDecimal(value: unknown, members: readonly string[]): readonly string[] {
  if (typeof value !== 'object' || value === null) return [];
  const record = value as Record<string, unknown>;
  return members.filter((name) => typeof record[name] === 'string' && !DECIMAL_INTEGER.test(record[name]));
}

function fieldName(error: ErrorObject, location: ValueLocation): string {
  const path = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') path.push(String(error.params['missingProperty']));
  if (error.keyword === 'additionalProperties') path.push(String(error.params['additionalProperty']));
  // A member whose name breaks propertyNames is named by its name, cut short: that name may be thousands of characters.
  if (error.propertyName !== undefined) path.push(error.propertyName.length > 40 ? `${error.propertyName.slice(0, 40)}…` : error.propertyName);
  return [location, ...path].join('.');
}

function describe(error: ErrorObject): string {
  if (error.keyword === 'required') return 'is required';
  if (error.keyword === 'additionalProperties') return 'is not allowed';
  if (error.propertyName !== undefined) return `name ${error.message ?? 'is invalid'}`;
  return error.message ?? 'is invalid';
}

export function toFieldErrors(errors: readonly ErrorObject[], location: ValueLocation): FieldErrors {
  const fields: FieldErrors = {};
  for (const error of errors) {
    // The summary "property name must be valid" beside the specific complaint, which is kept.
    if (error.keyword === 'propertyNames') continue;
    const name = fieldName(error, location);
    // The first complaint per field is the most specific one ajv reports.
    fields[name] ??= describe(error);
  }
  return fields;
}

const isCoerced = (location: ValueLocation): boolean => location === 'query' || location === 'path' || location === 'header';

/**
 * Compiles every schema once. Query strings go through a coercing instance, since every
 * query value arrives as a string; bodies and Kafka messages are validated without coercion.
 */
export function createSchemaRegistry(): SchemaRegistry {
  const strict = createAjv(false);
  const coercing = createAjv(true);
  const compiled = new Map<string, ValidateFunction>();
  const integers = new Map<SchemaId, readonly string[]>(
    (Object.entries(schemasById) as [SchemaId, unknown][]).map(([id, schema]) => [id, integerMembers(schema)]),
  );

  function validator(id: SchemaId, location: ValueLocation): ValidateFunction {
    const coerce = isCoerced(location);
    const key = `${coerce ? 'c' : 's'}:${id}`;
    let fn = compiled.get(key);
    if (fn === undefined) {
      const found = (coerce ? coercing : strict).getSchema(id);
      if (found === undefined) throw new Error(`schema ${id} is not registered`);
      fn = found;
      compiled.set(key, fn);
    }
    return fn;
  }

  // Compile everything now, so a broken schema stops the process at start rather than on a request.
  for (const [id, schema] of Object.entries(schemasById) as [SchemaId, { $id: string }][]) {
    if (schema.$id !== id) throw new Error(`schemas/${schema.$id} is registered under ${id}`);
    validator(id, 'body');
    validator(id, 'query');
  }

  return {
    check(id, value, location = 'message') {
      const fn = validator(id, location);
      const bad = isCoerced(location) ? notDecimal(value, integers.get(id) ?? []) : [];
      if (bad.length > 0) {
        // The rest is validated as usual, so that every bad member is named at once.
        const rest = Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([name]) => !bad.includes(name)));
        const others = fn(rest) ? {} : toFieldErrors(fn.errors ?? [], location);
        return { ok: false, fields: { ...others, ...Object.fromEntries(bad.map((name) => [`${location}.${name}`, 'must be integer'])) } };
      }
      if (fn(value)) return { ok: true, value: value as SchemaTypes[typeof id] };
      return { ok: false, fields: toFieldErrors(fn.errors ?? [], location) };
    },
  };
}
