/** An ISO date (and time) PostgreSQL stores as JavaScript reads it: 1970 to 9999, nothing it would refuse. */
export function isInstant(v: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/.test(v)) return false;
  const at = Date.parse(v);
  return at >= 0 && at < Date.UTC(10000, 0, 1);
}
