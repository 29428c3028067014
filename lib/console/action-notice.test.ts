import { describe, expect, it } from 'vitest';
import { noticeStillCurrent, refusalVersion } from './action-notice';

describe('noticeStillCurrent', () => {
  it('keeps a banner while the intent is at the version the action left, and drops it once it moved on', () => {
    expect(noticeStillCurrent(3, 3)).toBe(true);
    expect(noticeStillCurrent(3, 4)).toBe(false);
    expect(noticeStillCurrent(3, 6)).toBe(false);
    // An optimistic page may briefly show an older version than the answer: still the same action's banner.
    expect(noticeStillCurrent(3, 2)).toBe(true);
    expect(noticeStillCurrent(3, undefined)).toBe(true);
  });
});

describe('refusalVersion', () => {
  it('is the version shown, or the newer one a version conflict names', () => {
    expect(refusalVersion({ code: 'invalid_transition', message: 'no' }, 5)).toBe(5);
    expect(refusalVersion({ code: 'version_conflict', message: 'moved', details: { currentVersion: 7, expectedVersion: 5 } }, 5)).toBe(7);
    expect(refusalVersion({ code: 'version_conflict', message: 'odd', details: { currentVersion: 2 } }, 5)).toBe(5);
    expect(refusalVersion({ code: 'network', message: 'offline', details: { currentVersion: 'x' } }, 4)).toBe(4);
  });
});
