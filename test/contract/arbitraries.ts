import fc from 'fast-check';

/**
 * fast-check arbitraries from the JSON Schemas of the OpenAPI document (which zod-openapi generates from the
 * routes' Zod schemas): values the document calls valid, and near-valid values broken in one place. Only the
 * JSON Schema the document uses is supported; anything else throws, so a new construct is noticed, not skipped.
 */
export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
};

export type Context = {
  components: Record<string, JsonSchema>;
  /** Values to prefer for a `format: uuid` string (intents that exist), besides random ones. */
  knownIds: () => string[];
};

function resolve(schema: JsonSchema, ctx: Context): JsonSchema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace('#/components/schemas/', '');
  const target = ctx.components[name];
  if (!target) throw new Error(`unknown $ref ${schema.$ref}`);
  return resolve(target, ctx);
}

const smallJson = fc.jsonValue({ maxDepth: 2 });
const printable = (min: number, max: number) => fc.string({ minLength: min, maxLength: max });

export function validValue(input: JsonSchema, ctx: Context): fc.Arbitrary<unknown> {
  const schema = resolve(input, ctx);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf || schema.oneOf) return fc.oneof(...(schema.anyOf ?? schema.oneOf)!.map((s) => validValue(s, ctx)));
  const type = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : undefined;
  if (!type) return smallJson;
  if (type.length > 1) return fc.oneof(...type.map((t) => validValue({ ...schema, type: t }, ctx)));
  switch (type[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: Math.min(schema.maximum ?? 1_000_000, 2_147_483_647) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'string':
      if (schema.format === 'uuid') {
        const known = ctx.knownIds();
        return known.length ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: fc.uuid() }) : fc.uuid();
      }
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
      return printable(schema.minLength ?? 0, Math.min(schema.maxLength ?? 40, 40));
    case 'array':
      return fc.array(validValue(schema.items ?? {}, ctx), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) });
    case 'object': {
      const props = schema.properties ?? {};
      const required = new Set(schema.required ?? []);
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, sub] of Object.entries(props)) record[key] = validValue(sub, ctx);
      const fixed = fc.record(record, { requiredKeys: [...required].filter((k) => k in props) });
      if (schema.additionalProperties === false || Object.keys(props).length) return fixed;
      // A free-form object (a payload, a diff): a few keys of any JSON.
      return fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k !== '__proto__'), smallJson, { minKeys: 1, maxKeys: 4 });
    }
    default:
      throw new Error(`no generator for JSON Schema type ${type[0]}`);
  }
}

/** A value of another JSON type than the schema allows (so it must be refused). */
export function wrongType(input: JsonSchema, ctx: Context): fc.Arbitrary<unknown> {
  const schema = resolve(input, ctx);
  const allowed = new Set(Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []);
  const others: fc.Arbitrary<unknown>[] = [];
  if (!allowed.has('string')) others.push(fc.string({ maxLength: 10 }));
  if (!allowed.has('integer') && !allowed.has('number')) others.push(fc.integer());
  if (!allowed.has('boolean')) others.push(fc.boolean());
  if (!allowed.has('array')) others.push(fc.array(fc.integer(), { maxLength: 3 }));
  if (!allowed.has('object')) others.push(fc.constant({ unexpected: true }));
  if (!allowed.has('null')) others.push(fc.constant(null));
  return fc.oneof(...others);
}

/** An object body the schema refuses in one way: a required field missing, a field of the wrong type, an unknown field. */
export function brokenObject(input: JsonSchema, ctx: Context): fc.Arbitrary<unknown> {
  const schema = resolve(input, ctx);
  const base = validValue(schema, ctx) as fc.Arbitrary<Record<string, unknown>>;
  const props = Object.keys(schema.properties ?? {});
  const required = schema.required ?? [];
  const ways: fc.Arbitrary<unknown>[] = [wrongType(schema, ctx)];
  if (required.length) {
    ways.push(fc.tuple(base, fc.constantFrom(...required)).map(([body, key]) => {
      const copy = { ...body };
      delete copy[key];
      return copy;
    }));
  }
  if (props.length) {
    ways.push(
      fc.tuple(base, fc.constantFrom(...props)).chain(([body, key]) => wrongType(schema.properties![key], ctx).map((bad) => ({ ...body, [key]: bad }))),
    );
  }
  if (schema.additionalProperties === false) {
    ways.push(fc.tuple(base, fc.string({ minLength: 1, maxLength: 10 }).filter((k) => !props.includes(k) && k !== '__proto__')).map(([body, key]) => ({ ...body, [key]: 1 })));
  }
  return fc.oneof(...ways);
}
