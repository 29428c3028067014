/** A random idempotency key (also over plain http, where crypto.randomUUID is not available). */
export function newIdempotencyKey(prefix = 'console'): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return `${prefix}-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** The first block of a uuid: enough to tell intents (and runs) apart on a page, with the full id in a title. */
export function shortId(id: string): string {
  return id.slice(0, 8);
}
