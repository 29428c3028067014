/**
 * Fencing tokens are 64-bit in Postgres (bigint) and in Redis (INCR), and JSON numbers on the wire. They only grow by
 * one per grant, so a real one stays far below 2^53; this conversion is where one that did not would be caught,
 * rather than rounded to a neighbouring token (which could then pass a fence meant for someone else).
 */
export function tokenNumber(value: bigint | number | string): number {
  const n = typeof value === 'bigint' ? value : BigInt(value);
  if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < 0n) throw new RangeError(`fencing token ${n} is outside the range the API carries exactly (0 to 2^53 - 1)`);
  return Number(n);
}
