/**
 * JSON helpers that run anywhere (server, browser): no Node imports here.
 */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export function isPlainObject(value: unknown): value is JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  // A Blob, a Date or a FormData is an object too, but not one made of fields.
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** JSON with object keys sorted at every level: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * The preview of a correction's deep merge, for the console. The merge that is stored is done by the database
 * (bridge_jsonb_deep_merge in prisma/functions.sql): objects merge key by key, anything else (arrays, scalars, null)
 * replaces; a null sets the key to null, it does not delete it. test/engine/merge.test.ts checks on generated
 * payloads that this preview and the database agree.
 */
export function deepMerge(target: JsonObject, diff: JsonObject): JsonObject {
  const result: JsonObject = { ...target };
  for (const [key, value] of Object.entries(diff)) {
    const current = result[key];
    result[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return result;
}
