import { hash, verify } from '@node-rs/argon2';
import { randomSecret } from './secrets';

/**
 * Password hashing with argon2id (@node-rs/argon2: the Rust argon2 crate, prebuilt per platform and shipped in
 * the npm package, so no compiler or download at install). Its defaults are OWASP's argon2id baseline: 19 MiB,
 * 2 iterations, 1 lane. The PHC string stores salt and parameters, so they can be raised later without breaking
 * existing hashes.
 */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256; // argon2 hashes any length; the cap keeps a hostile megabyte body cheap to refuse

export async function hashPassword(password: string): Promise<string> {
  return hash(password);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    // A corrupt stored hash is a failed sign-in, not a crash of the sign-in page.
    return false;
  }
}

let dummyHash: Promise<string> | undefined;

/** Spends the same time as a real check, so an unknown username answers no faster than a wrong password. */
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hash(randomSecret());
  await verifyPassword(await dummyHash, password);
  return false;
}

/** A one-time password people can type: 20 characters from an alphabet without look-alikes (≈ 115 bits). */
export function generatePassword(length = 20): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  const out: string[] = [];
  // Rejection sampling over random bytes keeps every character equally likely.
  while (out.length < length) {
    for (const byte of Buffer.from(randomSecret(length * 2), 'base64url')) {
      if (byte < 256 - (256 % alphabet.length) && out.length < length) out.push(alphabet[byte % alphabet.length]);
    }
  }
  return out.join('');
}
