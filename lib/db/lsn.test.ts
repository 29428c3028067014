import { describe, expect, it } from 'vitest';
import { formatLsn, parseLsn } from './lsn';

describe('WAL positions', () => {
  it('reads and writes PostgreSQL’s text form', () => {
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) | 0xb374d848n);
    expect(formatLsn(parseLsn('16/B374D848')!)).toBe('16/B374D848');
    expect(parseLsn('0/0')).toBe(0n);
  });

  it('orders positions whose low halves differ in length', () => {
    expect(parseLsn('1/0')! > parseLsn('0/FFFFFFFF')!).toBe(true);
  });

  it('refuses anything else', () => {
    for (const bad of [undefined, null, '', '16', '16/', '/1', 'G/1', '1/2/3', '123456789/0', '1/0; drop']) expect(parseLsn(bad)).toBeNull();
  });
});
