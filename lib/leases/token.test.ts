import { describe, expect, it } from 'vitest';
import { tokenNumber } from './token';

describe('tokenNumber', () => {
  it('carries a token from bigint, number or text exactly, up to 2^53 - 1', () => {
    expect(tokenNumber(7n)).toBe(7);
    expect(tokenNumber('42')).toBe(42);
    expect(tokenNumber(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses a token the API could not carry exactly, rather than rounding it to a neighbour', () => {
    expect(() => tokenNumber(BigInt(Number.MAX_SAFE_INTEGER) + 1n)).toThrow(RangeError);
    expect(() => tokenNumber('-1')).toThrow(RangeError);
  });
});
