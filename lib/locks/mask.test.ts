import { describe, expect, it } from 'vitest';
import type { Role } from '@/lib/auth/permissions';
import type { AuthActor } from '@/lib/auth/types';
import { maskSqlLiterals, queriesFor } from './mask';

const actor = (roles: Role[]): AuthActor => ({ name: 'x', userId: 'u', roles, via: 'session', credentialId: 'c', mustChangePassword: false });

describe('query text on the Locks page', () => {
  it.each([
    [`UPDATE intents SET payload = '{"email":"a@b.example"}' WHERE id = '5d1c…' AND version = 3`, `UPDATE intents SET payload = ? WHERE id = ? AND version = ?`],
    [`SELECT * FROM t1 WHERE note = 'it''s' AND amount > 12.50 AND x = -7 AND y = 1e3`, `SELECT * FROM t1 WHERE note = ? AND amount > ? AND x = ? AND y = ?`],
    [`SELECT E'a\\'b', X'FF', U&'d\\0061t', $$secret body$$, $tag$also $$ secret$tag$`, `SELECT ?, ?, ?, ?, ?`],
    [`UPDATE intents SET status = $1 WHERE id = $2`, `UPDATE intents SET status = $1 WHERE id = $2`],
    [`SELECT "col2" FROM "Table3" WHERE a = 'cut off by track_activity_query_si`, `SELECT "col2" FROM "Table3" WHERE a = ?`],
  ])('%s', (sql, masked) => {
    expect(maskSqlLiterals(sql)).toBe(masked);
  });

  it('masks for viewers, everywhere in the answer; on-call sees it whole', () => {
    const snapshot = { locks: [{ pid: 1, query: `SELECT 'secret'` }], tree: [{ backend: { query: `DELETE FROM t WHERE v = 42` }, children: [] }], total: 3 };
    const viewer = queriesFor(actor(['viewer', 'admin']), snapshot);
    expect(JSON.stringify(viewer)).not.toMatch(/secret|42/);
    expect(viewer.total).toBe(3);
    expect(viewer.locks[0].pid).toBe(1);
    expect(queriesFor(actor(['oncall']), snapshot)).toEqual(snapshot);
  });
});
