import { describe, expect, it } from 'vitest';
import { foldIndexLocks } from './fold';
import type { LockRow } from './types';

const lock = (pid: number, relation: string | null, extra: Partial<LockRow> = {}): LockRow => ({
  pid, lockType: 'relation', mode: 'RowExclusiveLock', granted: true, fastpath: true, relation, indexOf: null, indexes: [], page: null, tuple: null,
  transactionId: null, virtualXid: null, objectId: null, waitingSince: null, applicationName: null, state: null, query: null, xactStart: null, intentId: null, ...extra,
});

describe('foldIndexLocks', () => {
  it('folds a backend’s index locks into its table row of the same mode, keeping the order of the rest', () => {
    const rows = [
      lock(1, null, { lockType: 'transactionid', transactionId: '900' }),
      lock(1, 'intents_pkey', { indexOf: 'intents' }),
      lock(1, 'intents'),
      lock(1, 'intents_list_idx', { indexOf: 'intents' }),
      lock(2, 'intents_pkey', { indexOf: 'intents', mode: 'AccessShareLock' }),
      lock(2, 'intents', { mode: 'AccessShareLock' }),
      // Another mode of the same table and backend is its own row; so is an index whose table row is not there.
      lock(1, 'intents', { mode: 'AccessShareLock' }),
      lock(3, 'audit_events_pkey', { indexOf: 'audit_events' }),
    ];
    const folded = foldIndexLocks(rows);
    expect(folded.map((r) => [r.pid, r.lockType, r.relation, r.mode, r.indexes])).toEqual([
      [1, 'transactionid', null, 'RowExclusiveLock', []],
      [1, 'relation', 'intents', 'RowExclusiveLock', ['intents_list_idx', 'intents_pkey']],
      [2, 'relation', 'intents', 'AccessShareLock', ['intents_pkey']],
      [1, 'relation', 'intents', 'AccessShareLock', []],
      [3, 'relation', 'audit_events_pkey', 'RowExclusiveLock', []],
    ]);
    // The input is left as it was.
    expect(rows[2].indexes).toEqual([]);
  });

  it('never folds a waiting lock into a granted one', () => {
    const folded = foldIndexLocks([lock(1, 'intents'), lock(1, 'intents_pkey', { indexOf: 'intents', granted: false })]);
    expect(folded).toHaveLength(2);
  });
});
