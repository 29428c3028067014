/**
 * What text every door accepts: PostgreSQL stores neither NUL (text and jsonb refuse it) nor an unpaired UTF-16
 * surrogate (not a character at all; Prisma's driver would write U+FFFD in its place without a word). One rule, so
 * a value refused by one door is refused by all of them, before anything is written or run. Runs anywhere (server,
 * browser): no imports.
 */
const UNSTORABLE_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function storable(value: string): boolean {
  return !UNSTORABLE_TEXT.test(value);
}

/** The refusal's words beside the field. */
export const STORABLE_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

/** A count and its noun, agreeing: "1 intent", "3 intents", "2 unblocks". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
