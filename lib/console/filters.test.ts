import { describe, expect, it } from 'vitest';
import { ignoredIntentFilters, parseIntentFilters } from './filters';

const ignored = (params: Record<string, string>) => ignoredIntentFilters(params, parseIntentFilters(params));

describe('ignoredIntentFilters', () => {
  it('names nothing when every filter of the link applies', () => {
    expect(ignored({ status: 'FAILED', q: 'city: Osaka', stuck: '15m', from: '2026-11-28T19:00:00Z', to: '2026-11-28T20:00:00Z', order: 'oldest' })).toEqual([]);
    expect(ignored({})).toEqual([]);
  });

  it('takes a status in any case', () => {
    expect(parseIntentFilters({ status: 'failed' }).status).toBe('FAILED');
    expect(ignored({ status: ' failed ' })).toEqual([]);
  });

  it('names each value that did not parse, with what it must be', () => {
    expect(ignored({ status: 'BOGUS', stuck: '7y', from: 'yesterday' })).toEqual([
      { field: 'status', value: 'BOGUS', why: expect.stringMatching(/^must be one of RECEIVED, NORMALIZED/) },
      { field: 'from', value: 'yesterday', why: expect.stringContaining('date and time') },
      { field: 'stuck', value: '7y', why: 'must be a duration such as 15m, 1h, 4h or 1d' },
    ]);
  });

  it('names both ends of a range that ends before it starts', () => {
    const params = { from: '2026-11-28T19:25:00Z', to: '2026-11-28T19:00:00Z' };
    expect(parseIntentFilters(params)).toMatchObject({ from: null, to: null });
    expect(ignored(params).map((i) => [i.field, i.why])).toEqual([
      ['from', 'the range ends before it starts, so neither end applies'],
      ['to', 'the range ends before it starts, so neither end applies'],
    ]);
  });

  it('names the contention refinements given without the contention filter', () => {
    expect(ignored({ contentionOperation: 'update_status' })).toEqual([{ field: 'contentionOperation', value: 'update_status', why: 'applies only with the contention filter' }]);
  });
});
