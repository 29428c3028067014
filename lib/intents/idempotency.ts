import { db, type Tx } from '@/lib/db/client';
import { abandonInRedis, claimInRedis, completeInRedis } from '@/lib/dedup/idempotency-redis';
import { concurrencySettings, env } from '@/lib/env';
import { DomainError, IdempotencyInProgressError, IdempotencyKeyReusedError, REPLAYED_HEADERS, ReplayedError, type ErrorBody } from './errors';
import { canonicalJson, sha256Hex } from './json';
import { recordOutcome } from './outcomes';
import { sleep } from './retry';

/**
 * Idempotency keys (brief §4): a repeat with the same key and body gets the first result — conflicts included —
 * without the work being done again, even when repeats arrive concurrently; the same key with another body is
 * refused. Keys belong to their caller (the signed-in user or the token's owner): another caller's identical key is
 * another key, so no one reads someone else's answer. The first request claims the key (a row in Postgres, so every
 * console instance agrees), and its outcome is stored in the same transaction that commits the work.
 */
export type StoredOutcome<T> = { ok: true; value: T } | { ok: false; status: number; error: ErrorBody };

export type IdempotencyHandle = {
  /** Store the outcome inside the transaction that commits the work. */
  completeIn: (tx: Tx, outcome: StoredOutcome<unknown>) => Promise<void>;
};

const CLAIM_LEASE_MS = 120_000;
const MAX_WAIT_MS = 30_000;

type Claimed = { claimed: true } | { claimed: false; record: { requestHash: string; operation: string; state: string; responseStatus: number | null; responseBody: unknown; lockedUntil: Date } };

/** Deterministic answers are kept; transient ones (lock timeout, deadlock, exhausted retries) free the key for a retry. */
function isStorable(err: unknown): err is DomainError {
  return err instanceof DomainError && err.httpStatus < 500 && err.httpStatus !== 423 && err.code !== 'idempotency_in_progress';
}

/** Redis' URL when IDEMPOTENCY_BACKEND=redis keeps the keys there (lib/dedup/idempotency-redis.ts); else undefined. */
function redisBackend(): string | undefined {
  const e = env();
  return e.IDEMPOTENCY_BACKEND === 'redis' ? e.REDIS_URL : undefined;
}

async function claim(scope: string, key: string, operation: string, requestHash: string): Promise<Claimed> {
  const ttlHours = concurrencySettings().idempotencyTtlHours;
  const redisUrl = redisBackend();
  if (redisUrl) {
    const result = await claimInRedis(redisUrl, { scope, key, operation, requestHash, claimLeaseMs: CLAIM_LEASE_MS, ttlMs: ttlHours * 3_600_000 });
    return result.claimed ? result : { claimed: false, record: { ...result.record, lockedUntil: new Date(result.record.lockedUntil) } };
  }
  // Take the key if it is free, expired, or abandoned by a request whose lease ran out.
  const taken = await db().$queryRaw<unknown[]>`
    INSERT INTO idempotency_records (scope, key, operation, request_hash, state, locked_until, expires_at)
    VALUES (${scope}, ${key}, ${operation}, ${requestHash}, 'in_progress', now() + ${`${CLAIM_LEASE_MS} milliseconds`}::interval, now() + ${`${ttlHours} hours`}::interval)
    ON CONFLICT (scope, key) DO UPDATE SET operation = EXCLUDED.operation, request_hash = EXCLUDED.request_hash, state = 'in_progress',
      response_status = NULL, response_body = NULL, locked_until = EXCLUDED.locked_until, created_at = now(), expires_at = EXCLUDED.expires_at
    WHERE idempotency_records.expires_at < now()
       OR (idempotency_records.state = 'in_progress' AND idempotency_records.locked_until < now()
           AND idempotency_records.request_hash = EXCLUDED.request_hash)
    RETURNING key`;
  if (taken.length) return { claimed: true };
  const rows = await db().$queryRaw<{ requestHash: string; operation: string; state: string; responseStatus: number | null; responseBody: unknown; lockedUntil: Date }[]>`
    SELECT request_hash AS "requestHash", operation, state, response_status AS "responseStatus", response_body AS "responseBody", locked_until AS "lockedUntil"
    FROM idempotency_records WHERE scope = ${scope} AND key = ${key}`;
  // Deleted between the two statements (a transient failure released it): try again.
  if (!rows[0]) return claim(scope, key, operation, requestHash);
  return { claimed: false, record: rows[0] };
}

async function store(client: Tx, scope: string, key: string, outcome: StoredOutcome<unknown>, inTransaction = false) {
  const status = outcome.ok ? 200 : outcome.status;
  const body = outcome.ok ? { ok: true, value: outcome.value } : { ok: false, error: outcome.error };
  const redisUrl = redisBackend();
  if (redisUrl) {
    // Redis is outside the work's transaction: the answer is stored once the work has committed, never before.
    if (!inTransaction) await completeInRedis(redisUrl, scope, key, status, body);
    return;
  }
  await client.$executeRaw`
    UPDATE idempotency_records SET state = 'completed', response_status = ${status}, response_body = ${JSON.stringify(body)}::jsonb
    WHERE scope = ${scope} AND key = ${key} AND state = 'in_progress'`;
}

/**
 * Marks an answer that was not worked out now but replayed from the first request with the same key; the API says
 * so in REPLAYED_HEADERS (ReplayedError carries them for replayed refusals). A symbol: JSON never carries the mark.
 */
const REPLAYED = Symbol('idempotentReplay');

/** The headers an answer goes out with: REPLAYED_HEADERS when it is a replay, none otherwise. */
export function replayHeaders(value: unknown): typeof REPLAYED_HEADERS | undefined {
  const replayed = typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[REPLAYED] === true;
  return replayed ? REPLAYED_HEADERS : undefined;
}

export async function runIdempotent<T>(
  /** `scope`: whose key it is (the actor); the same key from another caller is another key. */
  args: { key: string | undefined; scope: string; operation: string; request: unknown },
  work: (handle: IdempotencyHandle | undefined) => Promise<T>,
): Promise<T> {
  const { key, scope, operation } = args;
  if (key === undefined) return work(undefined);
  const requestHash = sha256Hex(`${operation}\n${canonicalJson(args.request)}`);
  const started = Date.now();
  for (let poll = 0; ; poll++) {
    const result = await claim(scope, key, operation, requestHash);
    if (result.claimed) break;
    const { record } = result;
    if (record.requestHash !== requestHash || record.operation !== operation) throw new IdempotencyKeyReusedError(key);
    if (record.state === 'completed') {
      recordOutcome(operation, 'idempotent_replay');
      const body = record.responseBody as StoredOutcome<T>;
      if (body.ok) {
        if (typeof body.value === 'object' && body.value !== null) Object.defineProperty(body.value, REPLAYED, { value: true });
        return body.value;
      }
      throw new ReplayedError(body.error, record.responseStatus ?? 409);
    }
    // Another request with this key is at work: wait for its answer rather than do the work twice.
    if (Date.now() - started > MAX_WAIT_MS) throw new IdempotencyInProgressError(key);
    await sleep(Math.min(200, 10 * 2 ** Math.min(poll, 5)));
  }

  const handle: IdempotencyHandle = { completeIn: (tx, outcome) => store(tx, scope, key, outcome, true) };
  try {
    const value = await work(handle);
    // JSON round trip: the first caller sees exactly what a replay will see.
    const normalized = JSON.parse(JSON.stringify(value)) as T;
    // Usually already stored by the committing transaction (then this matches no in-progress row); written here
    // when the work committed nothing (already applied) or its transaction rolled back after storing.
    await store(db() as unknown as Tx, scope, key, { ok: true, value: normalized });
    return normalized;
  } catch (err) {
    // Both statements only touch a key still in progress: an outcome committed with the work stays as it is.
    if (isStorable(err)) {
      await store(db() as unknown as Tx, scope, key, { ok: false, status: err.httpStatus, error: err.toBody() });
    } else {
      const redisUrl = redisBackend();
      if (redisUrl) await abandonInRedis(redisUrl, scope, key);
      else await db().$executeRaw`DELETE FROM idempotency_records WHERE scope = ${scope} AND key = ${key} AND state = 'in_progress'`;
    }
    throw err;
  }
}

/** Drops records past their retention (at least 24 h). */
export async function pruneIdempotencyRecords(): Promise<number> {
  return db().$executeRaw`DELETE FROM idempotency_records WHERE expires_at < now()`;
}
