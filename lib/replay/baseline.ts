import pg from 'pg';
import { lockAndUpdateStatusSql } from '@/lib/intents/repository';
import { canTransition, INTENT_STATUSES, type IntentStatus } from '@/lib/intents/state-machine';

/**
 * The raw-SQL baseline of the benchmark (brief §7): the engine's status-update transaction written against plain
 * `pg`, with nothing around it — no Prisma, no validation, no idempotency, no outcome counting, no deadlock
 * wrapper. Same statements, same order, same round trips as lib/intents, in whichever form the engine is set to
 * use: the one statement of lockAndUpdateStatusSql (the very same SQL text), or the five-step transaction (label
 * and lock timeout, SELECT … FOR UPDATE, the transition check, UPDATE … RETURNING with its audit insert in one
 * CTE). So the ratio of the two throughputs is the price of everything the engine adds. Parameters are bound.
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

/** The one-statement form: the engine's own SQL (lockAndUpdateStatusSql), run by plain pg. */
export async function rawUpdateStatusInOneStatement(pool: pg.Pool, id: string, to: IntentStatus, actor: string, lockTimeoutMs: number, prepared = false): Promise<number> {
  const sql = lockAndUpdateStatusSql({
    id,
    to,
    allowedFrom: INTENT_STATUSES.filter((s) => canTransition(s, to)),
    expectedVersion: null,
    label: `bridge:baseline:${id}`,
    lockTimeoutMs,
    actor,
    action: 'status_change',
  });
  const { rows } = await pool.query<Row & { rowKind: string }>({ name: prepared ? 'baseline_one_statement' : undefined, text: sql.text, values: sql.values });
  const locked = rows.find((r) => r.rowKind === 'locked');
  const updated = rows.find((r) => r.rowKind === 'updated');
  if (!locked) throw new BaselineTransitionError(`intent ${id} not found`);
  if (updated) return updated.version;
  if (locked.status === to) return locked.version;
  throw new BaselineTransitionError(`${locked.status} -> ${to} is not allowed`);
}

export function createBaselinePool(connectionString: string, max: number): pg.Pool {
  return new pg.Pool({ connectionString, max, application_name: 'bridge:baseline' });
}
