import { describe, expect, it } from 'vitest';
import type { IntentListFilters } from '@/lib/intents/keys';
import { listAffected } from './live-refresh';

const base: IntentListFilters = { status: null, q: '', source: null, from: null, to: null, contention: null, contentionOperation: null, contentionFrom: null, contentionTo: null, stuck: null, order: null, cursor: null, limit: 50 };
const shown = new Set(['a', 'b']);

describe('listAffected', () => {
  it('re-reads a page when an intent it shows changed', () => {
    expect(listAffected({ ...base, cursor: 'c1' }, shown, [{ intentId: 'a', toStatus: 'FAILED' }])).toBe(true);
  });

  it('leaves older pages alone when the change is elsewhere', () => {
    expect(listAffected({ ...base, cursor: 'c1' }, shown, [{ intentId: 'z', toStatus: 'FAILED' }])).toBe(false);
  });

  it('re-reads the newest page when a change can enter it, by status', () => {
    expect(listAffected(base, shown, [{ intentId: 'z', toStatus: 'FAILED' }])).toBe(true);
    expect(listAffected({ ...base, status: 'FAILED' }, shown, [{ intentId: 'z', toStatus: 'FAILED' }])).toBe(true);
    expect(listAffected({ ...base, status: 'FAILED' }, shown, [{ intentId: 'z', toStatus: 'COMPLETED' }])).toBe(false);
    expect(listAffected({ ...base, status: 'FAILED' }, shown, [{ intentId: 'z', toStatus: null }])).toBe(true);
  });

  it('oldest first, lets a changed intent in only at the end of the list; never into the stuck view', () => {
    expect(listAffected({ ...base, order: 'oldest' }, shown, [{ intentId: 'z', toStatus: 'FAILED' }])).toBe(true);
    expect(listAffected({ ...base, order: 'oldest', limit: 2 }, shown, [{ intentId: 'z', toStatus: 'FAILED' }])).toBe(false);
    expect(listAffected({ ...base, stuck: '1h', order: 'oldest' }, shown, [{ intentId: 'z', toStatus: 'FAILED' }])).toBe(false);
    expect(listAffected({ ...base, stuck: '1h', order: 'oldest' }, shown, [{ intentId: 'a', toStatus: 'FAILED' }])).toBe(true);
  });

  it('leaves a time range that ended alone, and ignores events about no intent', () => {
    expect(listAffected({ ...base, to: '2020-01-01T00:00:00Z' }, shown, [{ intentId: 'z', toStatus: 'FAILED' }])).toBe(false);
    expect(listAffected(base, shown, [{ intentId: null, toStatus: null }])).toBe(false);
  });
});
