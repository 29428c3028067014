import { describe, expect, it } from 'vitest';
import { lockHolderLink } from './messages';

describe('lockHolderLink', () => {
  it('is the Locks page with the holder selected, for a lock refusal that names one', () => {
    expect(lockHolderLink({ code: 'lock_timeout', details: { holderPid: 4242, locksPage: '/locks?pid=4242' } })).toEqual({ href: '/locks?pid=4242', pid: 4242 });
    expect(lockHolderLink({ code: 'lock_timeout', details: { holderPid: null, locksPage: '/locks' } })).toEqual({ href: '/locks', pid: null });
  });

  it('is nothing for other errors, a refusal without the link, or a link elsewhere', () => {
    expect(lockHolderLink({ code: 'version_conflict', details: { locksPage: '/locks?pid=1' } })).toBeNull();
    expect(lockHolderLink({ code: 'lock_timeout', details: { holders: [] } })).toBeNull();
    expect(lockHolderLink({ code: 'lock_timeout', details: { locksPage: 'https://example.com/locks?pid=1' } })).toBeNull();
    expect(lockHolderLink(null)).toBeNull();
  });
});
