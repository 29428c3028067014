import { describe, expect, it } from 'vitest';
import { canonicalJson, deepMerge, isPlainObject } from '@/lib/shared/json';
import { correctionIdFor, sha256Hex } from './json';

const ID_A = '00000000-0000-4000-8000-00000000000a';
const ID_B = '00000000-0000-4000-8000-00000000000b';

describe('canonicalJson', () => {
  it('sorts object keys at every level and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('gives equal text for equal values written in another key order', () => {
    expect(canonicalJson({ x: 1, y: { p: 'q', r: [1, 2] } })).toBe(canonicalJson({ y: { r: [1, 2], p: 'q' }, x: 1 }));
  });

  it('tells apart different arrays order, types and nesting', () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: '1' }));
    expect(canonicalJson({ a: { b: 1 } })).not.toBe(canonicalJson({ 'a.b': 1 }));
  });

  it('writes scalars as JSON, undefined as null, and escapes keys', () => {
    expect(canonicalJson('a"b')).toBe('"a\\"b"');
    expect(canonicalJson(true)).toBe('true');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson({ 'k"': 1 })).toBe('{"k\\"":1}');
  });
});

describe('isPlainObject', () => {
  it('is true for objects only', () => {
    expect(isPlainObject({})).toBe(true);
    expect(isPlainObject([])).toBe(false);
    expect(isPlainObject(null)).toBe(false);
    expect(isPlainObject('x')).toBe(false);
  });
});

describe('deepMerge', () => {
  it('merges nested objects key by key', () => {
    expect(deepMerge({ a: 1, n: { x: 1, y: 2 } }, { b: 2, n: { y: 3, z: 4 } })).toEqual({ a: 1, b: 2, n: { x: 1, y: 3, z: 4 } });
  });

  it('replaces arrays and scalars, and replaces an object by a scalar or the reverse', () => {
    expect(deepMerge({ list: [1, 2, 3], s: 'a', o: { k: 1 }, v: 5 }, { list: [9], s: 'b', o: 7, v: { k: 2 } })).toEqual({
      list: [9],
      s: 'b',
      o: 7,
      v: { k: 2 },
    });
  });

  it('sets null rather than deleting the key', () => {
    expect(deepMerge({ a: 1, b: 2 }, { a: null })).toEqual({ a: null, b: 2 });
  });

  it('does not modify its inputs', () => {
    const target = { n: { x: 1 } };
    const diff = { n: { y: 2 } };
    deepMerge(target, diff);
    expect(target).toEqual({ n: { x: 1 } });
    expect(diff).toEqual({ n: { y: 2 } });
  });
});

describe('correctionIdFor', () => {
  it('is a sha256 hex of the intent and the canonical diff', () => {
    const id = correctionIdFor(ID_A, { b: 1, a: 2 });
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(id).toBe(sha256Hex(`${ID_A}\n{"a":2,"b":1}`));
  });

  it('is the same for the same diff in another key order, and differs by intent or by diff', () => {
    expect(correctionIdFor(ID_A, { a: 1, n: { x: 1, y: 2 } })).toBe(correctionIdFor(ID_A, { n: { y: 2, x: 1 }, a: 1 }));
    expect(correctionIdFor(ID_A, { a: 1 })).not.toBe(correctionIdFor(ID_B, { a: 1 }));
    expect(correctionIdFor(ID_A, { a: 1 })).not.toBe(correctionIdFor(ID_A, { a: 2 }));
  });
});

describe('sha256Hex', () => {
  it('matches the known digest of "abc"', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
