import { z } from 'zod';

/**
 * Strict readers for values that arrive as text (query strings, form fields) at any door. `Number(" 1528")`,
 * `Number("0x5F8")` and `Number("1e3")` are all numbers to JavaScript, and `z.coerce.number()` inherits that; a pid
 * or a limit is written in decimal digits and nothing else. Digits beyond 2^53 would be rounded silently, so they
 * are refused too.
 */
const DIGITS = /^(0|[1-9][0-9]{0,15})$/;

export function wholeNumber(options: { min: number; max: number; what?: string }) {
  const what = options.what ?? 'a whole number';
  return z.preprocess(
    (value) => (typeof value === 'string' && DIGITS.test(value) ? Number(value) : value),
    z
      .number({ error: `must be ${what} written in decimal digits` })
      .int({ error: `must be ${what} written in decimal digits` })
      .min(options.min, { error: `must be at least ${options.min}` })
      .max(options.max, { error: `must be at most ${options.max}` }),
  );
}
