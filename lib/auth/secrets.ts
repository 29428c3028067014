import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Random secrets and their stored form. Only digests are stored; the secret itself is shown or set once. */

/** 32 random bytes, base64url: 256 bits, 43 characters. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** sha256, hex: fast is right here, since the input is 256 random bits, not a guessable password. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Compares two secrets without leaking, through timing, how much of them matched. */
export function secretsEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const dbuf = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, dbuf);
}
