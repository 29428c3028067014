import { describe, expect, it } from 'vitest';
import { generatePassword, hashPassword, verifyAgainstDummy, verifyPassword } from '@/lib/auth/password';
import { randomSecret, secretsEqual, sha256Hex } from '@/lib/auth/secrets';

describe('password hashing', () => {
  it('stores argon2id PHC strings with a fresh salt each time', async () => {
    const a = await hashPassword('a long enough password');
    const b = await hashPassword('a long enough password');
    expect(a).toMatch(/^\$argon2id\$v=19\$m=\d+,t=\d+,p=\d+\$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('a long enough password');
  });

  it('verifies the right password only', async () => {
    const h = await hashPassword('correct horse battery staple');
    expect(await verifyPassword(h, 'correct horse battery staple')).toBe(true);
    expect(await verifyPassword(h, 'correct horse battery stapl')).toBe(false);
    expect(await verifyPassword(h, '')).toBe(false);
  });

  it('treats a corrupt stored hash as a failed check, not a crash', async () => {
    expect(await verifyPassword('not-a-hash', 'whatever')).toBe(false);
    expect(await verifyAgainstDummy('whatever')).toBe(false);
  });

  it('generates typeable one-time passwords without look-alike characters', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const p = generatePassword();
      expect(p).toMatch(/^[a-km-zA-HJ-NP-Z2-9]{20}$/);
      expect(p).not.toMatch(/[01lIoO]/);
      seen.add(p);
    }
    expect(seen.size).toBe(200);
  });
});

describe('secrets', () => {
  it('are 256-bit base64url strings, digested with sha256', () => {
    const s = randomSecret();
    expect(s).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sha256Hex(s)).toMatch(/^[0-9a-f]{64}$/);
    expect(secretsEqual(s, s)).toBe(true);
    expect(secretsEqual(s, `${s}x`)).toBe(false);
    expect(secretsEqual(s, '')).toBe(false);
  });
});
