import { describe, expect, it } from 'vitest';
import { formatUtc, formatUtcTime } from './time';

describe('console time format', () => {
  it('writes UTC, 24-hour, whatever the input form', () => {
    const t = '2026-11-23T20:04:05.678Z';
    expect(formatUtc(t)).toBe('2026-11-23 20:04:05 UTC');
    expect(formatUtc(Date.parse(t), { seconds: false })).toBe('2026-11-23 20:04 UTC');
    expect(formatUtcTime(new Date(t))).toBe('20:04:05 UTC');
    expect(formatUtc('2026-11-23T23:30:00-02:00')).toBe('2026-11-24 01:30:00 UTC');
  });
});
