/**
 * PostgreSQL's WAL positions (pg_lsn, written `16/B374D848`: the high and low 32 bits in hex) as bigints, so that two
 * positions compare and subtract in JavaScript without a round trip to the server.
 */
const LSN = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i;

/** The position, or null for text that is not one (a cookie or a header is a client's echo, not trusted input). */
export function parseLsn(text: string | null | undefined): bigint | null {
  const match = text ? LSN.exec(text.trim()) : null;
  if (!match) return null;
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/**
 * The request header a reader sends with the position its read must see (a command's `Bridge-Commit-Lsn`, a live
 * event's `lsn`): a read replica that has not replayed that far does not serve the read. Here, beside the position's
 * parsing, because the browser's API client sends it too and must not pull in the server's database layer.
 */
export const READ_AFTER_HEADER = 'Bridge-Read-After';
