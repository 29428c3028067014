import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { mergeDiff } from '@/lib/console/json-diff';
import { db } from '@/lib/db/client';
import { deepMerge, type JsonObject, type JsonValue } from '@/lib/shared/json';
import { resetDatabase } from '../helpers';

/**
 * The deep merge of a correction exists once, in SQL (bridge_jsonb_deep_merge, prisma/functions); the console's
 * preview (lib/shared/json.ts deepMerge, which the correction form uses as mergeDiff) is tied to it here by a
 * property test over generated payloads and diffs.
 */
beforeEach(resetDatabase);

describe('the deep merge in the database', () => {
  // JSON as Postgres stores it: no -0 (jsonb keeps 0), finite numbers, strings without NUL.
  const key = fc.oneof(fc.constantFrom('a', 'b', 'c', 'amount', 'nested', 'x y', 'ü'), fc.string({ maxLength: 6 }).filter((k) => !k.includes('\u0000') && k !== '__proto__'));
  const scalar = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -1e9, max: 1e9 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
    fc.string({ maxLength: 8 }).filter((s) => !s.includes('\u0000')),
  );
  const { json } = fc.letrec<{ json: JsonValue; object: JsonObject }>((tie) => ({
    json: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('json'), { maxLength: 3 }), tie('object')),
    object: fc.dictionary(key, tie('json'), { maxKeys: 4 }) as fc.Arbitrary<JsonObject>,
  }));
  const object = fc.dictionary(key, json, { maxKeys: 5 }) as fc.Arbitrary<JsonObject>;

  it('agrees with the console’s deepMerge on 300 generated payloads and diffs', async () => {
    const pairs = fc.sample(fc.tuple(object, object), { numRuns: 300, seed: 20261123 });
    // Overlapping keys are what the merge is about: make every other diff reuse the payload's keys.
    for (const [k, [payload, diff]] of pairs.entries()) {
      if (k % 2 === 0) for (const name of Object.keys(payload)) if (!(name in diff)) diff[name] = { nested: k };
    }
    const rows = await db().$queryRaw<{ merged: JsonObject }[]>`
      SELECT bridge_jsonb_deep_merge(p.payload, p.diff) AS merged
      FROM jsonb_to_recordset(${JSON.stringify(pairs.map(([payload, diff]) => ({ payload, diff })))}::jsonb) AS p(payload jsonb, diff jsonb)`;
    expect(rows).toHaveLength(pairs.length);
    // jsonb normalises numbers' text (1e21 → 1000000000000000000000): compare as values, which both sides parse alike.
    rows.forEach((row, k) => expect(row.merged, JSON.stringify(pairs[k])).toEqual(JSON.parse(JSON.stringify(deepMerge(pairs[k][0], pairs[k][1])))));
  });

  it('is the function the correction form previews with', () => {
    expect(mergeDiff).toBe(deepMerge);
  });

  it('merges objects key by key and replaces everything else, a null included', async () => {
    const payload = { a: { b: 1, c: [1, 2] }, d: 'x', e: { f: 1 } };
    const diff = { a: { c: [3], g: null }, d: { now: 'an object' }, e: null, h: 2 };
    const [{ merged }] = await db().$queryRaw<{ merged: unknown }[]>`SELECT bridge_jsonb_deep_merge(${JSON.stringify(payload)}::jsonb, ${JSON.stringify(diff)}::jsonb) AS merged`;
    expect(merged).toEqual({ a: { b: 1, c: [3], g: null }, d: { now: 'an object' }, e: null, h: 2 });
    expect(merged).toEqual(deepMerge(payload, diff as JsonObject));
  });
});
