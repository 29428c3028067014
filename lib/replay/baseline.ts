import pg from 'pg';
import { updateStatusStatement } from '@/lib/intents/statements';
import { canTransition, INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';

/**
 * The raw-SQL baselines of the benchmark, written against plain `pg` with nothing around them — no Prisma,
 * no validation, no idempotency, no outcome counting, no deadlock wrapper:
 * - rawUpdateStatusInOneStatement runs the engine's own status-update statement (the very same SQL text), so the
 *   in-process ratio is the price of everything the engine adds in this process;
 * - rawUpdateStatus is the naive five-step locked transaction (label and lock timeout, SELECT … FOR UPDATE, the
 *   transition check in the client, UPDATE … RETURNING with its audit insert, COMMIT), which the JSON API row of
 *   `npm run bench` compares the whole door against.
 * Parameters are bound.
 */
const LABEL_SQL = `SELECT set_config('application_name', $1, true), set_config('lock_timeout', $2, true)`;
const LOCK_SQL = `SELECT id::text AS id, status::text AS status, payload, source, version, is_replay AS "isReplay",
  created_at AS "createdAt", updated_at AS "updatedAt" FROM intents WHERE id = $1::uuid FOR UPDATE`;
const UPDATE_SQL = `
  WITH updated AS (
    UPDATE intents SET status = $2::"IntentStatus", version = version + 1, updated_at = now()
    WHERE id = $1::uuid AND version = $3
    RETURNING *
  ), audit AS (
    INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after, details)
    SELECT id, 'status_change', $4, $5::"IntentStatus", status, version - 1, version, $6::jsonb
    FROM updated
  )
  SELECT id::text AS id, status::text AS status, payload, source, version, is_replay AS "isReplay",
         created_at AS "createdAt", updated_at AS "updatedAt" FROM updated`;

type Row = { id: string; status: IntentStatus; version: number };

export class BaselineTransitionError extends Error {}

/**
 * One status update, the raw way. Returns the new version (or the current one when already at `to`). `prepared`
 * names the statements (server-side prepared, parsed once per connection) exactly when the engine does, so the two
 * sides differ only in what runs in this process.
 */
export async function rawUpdateStatus(pool: pg.Pool, id: string, to: IntentStatus, actor: string, lockTimeoutMs: number, prepared = false): Promise<number> {
  const name = (n: string) => (prepared ? `baseline_${n}` : undefined);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    try {
      await client.query({ name: name('label'), text: LABEL_SQL, values: [`bridge:baseline:${id}`, `${lockTimeoutMs}ms`] });
      const { rows } = await client.query<Row>({ name: name('lock'), text: LOCK_SQL, values: [id] });
      const row = rows[0];
      if (!row) throw new BaselineTransitionError(`intent ${id} not found`);
      if (row.status === to) {
        await client.query('COMMIT');
        return row.version;
      }
      if (!canTransition(row.status, to)) throw new BaselineTransitionError(`${row.status} -> ${to} is not allowed`);
      const updated = await client.query<Row>({ name: name('update'), text: UPDATE_SQL, values: [id, to, row.version, actor, row.status, 'null'] });
      await client.query('COMMIT');
      return updated.rows[0].version;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } finally {
    client.release();
  }
}

/** The engine's own statement (updateStatusStatement, the very same SQL text), run by plain pg. */
export async function rawUpdateStatusInOneStatement(pool: pg.Pool, id: string, to: IntentStatus, actor: string, lockTimeoutMs: number, prepared = false): Promise<number> {
  const sql = updateStatusStatement({
    id,
    to,
    allowedFrom: INTENT_STATUSES.filter((s) => canTransition(s, to)),
    expectedVersion: null,
    lock: 'wait',
    lockTimeoutMs,
    contendedWithinMs: 0,
    actor,
    reason: null,
    key: null,
  });
  const { rows } = await pool.query<Row & { outcome: string }>({ name: prepared ? 'baseline_one_statement' : undefined, text: sql.text, values: sql.values });
  const row = rows[0];
  if (row.outcome === 'applied' || row.outcome === 'already_applied') return row.version;
  throw new BaselineTransitionError(`${id}: ${row.outcome} (${row.status} -> ${to})`);
}

export function createBaselinePool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: 'bridge:baseline' });
  // An idle connection the server ends (a restart, the bench's throw-away database stopping) must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}
