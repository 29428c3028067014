import { describe, expect, it } from 'vitest';
import { correctionLines, diffLines, mergeDiff, overlappingPaths, parseDiffText, recordBefore, touchedPaths } from './json-diff';

describe('correction diffs for the console', () => {
  it('merges like the engine: objects key by key, everything else replaced', () => {
    expect(mergeDiff({ a: 1, b: { c: 1, d: 2 }, e: [1] }, { b: { c: 3 }, e: [2], f: null })).toEqual({ a: 1, b: { c: 3, d: 2 }, e: [2], f: null });
  });

  it('lists each changed leaf with its value before and after, skipping no-op paths', () => {
    expect(diffLines({ amount: 10, address: { city: 'Leeds', zip: 'LS1' } }, { amount: 12, address: { city: 'Leeds', street: 'Main' } })).toEqual([
      { path: 'amount', before: 10, after: 12 },
      { path: 'address.street', before: undefined, after: 'Main' },
    ]);
  });

  it('finds overlapping fields between two edits', () => {
    expect(overlappingPaths(touchedPaths({ address: { city: 'X' } }), touchedPaths({ address: 'gone', amount: 1 }))).toEqual(['address.city']);
    expect(overlappingPaths(['amount'], ['currency'])).toEqual([]);
  });

  it('validates the editor text with a message a person can act on', () => {
    expect(parseDiffText('{"amount": 12}')).toEqual({ ok: true, diff: { amount: 12 } });
    expect(parseDiffText('')).toMatchObject({ ok: false, message: expect.stringContaining('JSON object') });
    expect(parseDiffText('[1]')).toMatchObject({ ok: false, message: expect.stringContaining('must be a JSON object') });
    expect(parseDiffText('{}')).toMatchObject({ ok: false, message: expect.stringContaining('at least one field') });
    const bad = parseDiffText('{\n  "amount": 12,\n}');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toMatch(/^Not valid JSON: .*line 3/);
  });
});

describe('recorded before-values make the history a two-sided diff', () => {
  it('records what each changed field held, and reads it back for the history', () => {
    const before = recordBefore({ amount: 10, customer: { city: 'Leeds' } }, { amount: 12, customer: { city: 'York', zip: 'Y1' } });
    expect(before).toEqual([{ path: 'amount', value: 10 }, { path: 'customer.city', value: 'Leeds' }, { path: 'customer.zip' }]);
    expect(correctionLines({}, { amount: 12, customer: { city: 'York', zip: 'Y1' } }, { console: { before } })).toEqual([
      { path: 'amount', before: 10, after: 12 },
      { path: 'customer.city', before: 'Leeds', after: 'York' },
      { path: 'customer.zip', before: undefined, after: 'Y1' },
    ]);
  });

  it('falls back to earlier corrections when nothing was recorded (API corrections)', () => {
    expect(correctionLines({ amount: 12 }, { amount: 14 }, null)).toEqual([{ path: 'amount', before: 12, after: 14 }]);
    expect(correctionLines({}, { amount: 14 }, { other: true })).toEqual([{ path: 'amount', before: undefined, after: 14 }]);
  });
});

describe('changesSinceLines', () => {
  it('replays the changes from the reviewer’s version, so each shows the value it replaced', async () => {
    const { changesSinceLines } = await import('./json-diff');
    const base = { amount: 10, address: { city: 'Osaka', zip: '530' } };
    expect(changesSinceLines(base, [{ amount: 12 }, { amount: 15, address: { city: 'Kyoto' } }, { note: 'x' }])).toEqual([
      [{ path: 'amount', before: 10, after: 12 }],
      [
        { path: 'amount', before: 12, after: 15 },
        { path: 'address.city', before: 'Osaka', after: 'Kyoto' },
      ],
      [{ path: 'note', before: undefined, after: 'x' }],
    ]);
  });
});
