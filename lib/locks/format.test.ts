import { describe, expect, it } from 'vitest';
import { ageAt, formatDuration } from './format';

describe('formatDuration', () => {
  it('picks the unit a person reads fastest', () => {
    expect(formatDuration(null)).toBe('—');
    expect(formatDuration(850.4)).toBe('850 ms');
    expect(formatDuration(1856)).toBe('1.8 s');
    expect(formatDuration(5000)).toBe('5.0 s');
    expect(formatDuration(12_999)).toBe('12 s');
    expect(formatDuration(245_000)).toBe('4 min 05 s');
    expect(formatDuration(2 * 3600_000 + 10 * 60_000)).toBe('2 h 10 min');
    expect(formatDuration(3 * 86400_000 + 5 * 3600_000)).toBe('3 d 5 h');
    expect(formatDuration(-5)).toBe('0 ms');
  });
  it('measures ages on the snapshot clock', () => {
    expect(ageAt('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:30.000Z')).toBe('30 s');
    expect(ageAt(null, '2026-01-01T00:00:30.000Z')).toBe('—');
  });
});
