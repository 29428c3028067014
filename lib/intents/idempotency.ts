import { db } from '@/lib/db/client';
import { abandonInRedis, claimInRedis, completeInRedis } from '@/lib/dedup/idempotency-redis';
import { concurrencySettings, env } from '@/lib/env';
import { IdempotencyInProgressError, IdempotencyKeyReusedError, REPLAYED_HEADERS, ReplayedError } from './errors';
import { DomainError, type ErrorBody } from '@/lib/shared/errors';
import { recordEngineEvent } from './engine-events';
import { sha256Hex } from './json';
import { canonicalJson } from '@/lib/shared/json';
import { recordOutcome } from './outcomes';
import { isStoredOutcome, type KeyRef, type StoredOutcome } from './statements';
import { sleep } from '@/lib/shared/backoff';

/**
 * Idempotency keys: a repeat with the same key and body gets the first result — conflicts included —
 * without the work being done again, even when repeats arrive concurrently; the same key with another body is
 * refused. Keys belong to their caller (the signed-in user or the token's owner): another caller's identical key is
 * another key, so no one reads someone else's answer. The first request claims the key (a row in Postgres, so every
 * console instance agrees), and the command's own statement stores its outcome (the outcome column and the row) in
 * the same transaction that commits the work (prisma/functions, bridge_complete_key). A repeat replays that outcome
 * through the very mapping the first answer went through, so both are the same answer.
 */
/** Answers stored before the commands stored their outcomes: kept readable until they expire. */
type StoredAnswer<T> = { ok: true; value: T } | { ok: false; status: number; error: ErrorBody };

const CLAIM_LEASE_MS = 120_000;
const MAX_WAIT_MS = 30_000;

type Claimed = { claimed: true } | { claimed: false; record: { requestHash: string; operation: string; state: string; responseStatus: number | null; responseBody: unknown; lockedUntil: Date } };

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

function markReplayed<T>(value: T): T {
  if (typeof value === 'object' && value !== null) Object.defineProperty(value, REPLAYED, { value: true });
  return value;
}

/** What a stored answer was, in the engine's words (`applied`, `stale`, …; `ok` / `refused` in the older form). */
function storedOutcomeName(body: unknown): string {
  if (isStoredOutcome(body)) return body.outcome;
  return (body as StoredAnswer<unknown> | null)?.ok ? 'ok' : 'refused';
}

/** A stored answer again: the value (marked replayed), or the refusal as a ReplayedError. */
function replayStored<T>(body: unknown, status: number | null, replay: (stored: StoredOutcome) => T): T {
  if (isStoredOutcome(body)) {
    try {
      return markReplayed(replay(body));
    } catch (err) {
      if (err instanceof DomainError) throw new ReplayedError(err.toBody(), err.httpStatus);
      throw err;
    }
  }
  const answer = body as StoredAnswer<T>;
  if (answer.ok) return markReplayed(answer.value);
  throw new ReplayedError(answer.error, status ?? 409);
}

/**
 * Runs `work` once per key: `work` gets the key to hand to its statement (which stores the outcome), or undefined
 * without a key; `replay` turns a stored outcome into the answer, exactly as `work` turned the fresh one.
 */
export async function runIdempotent<T>(
  /** `scope`: whose key it is (the actor); the same key from another caller is another key. */
  /** `intentId`: the intent a repeat is recorded for (its timeline shows each repeat). */
  args: { key: string | undefined; scope: string; operation: string; intentId?: string; request: unknown },
  work: (key: KeyRef | undefined) => Promise<T>,
  replay: (stored: StoredOutcome) => T,
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
      if (args.intentId) {
        recordEngineEvent({ intentIds: [args.intentId], kind: 'idempotent_repeat', operation, actor: scope, details: { outcome: storedOutcomeName(record.responseBody) } });
      }
      return replayStored(record.responseBody, record.responseStatus, replay);
    }
    // Another request with this key is at work: wait for its answer rather than do the work twice.
    if (Date.now() - started > MAX_WAIT_MS) throw new IdempotencyInProgressError(key);
    await sleep(Math.min(200, 10 * 2 ** Math.min(poll, 5)));
  }

  const redisUrl = redisBackend();
  if (redisUrl) {
    // Redis cannot join the command's transaction: the statement runs without the key, and the answer is stored
    // once the work has committed, never before (in the older { ok, value } form replayStored reads). Deterministic
    // refusals are kept like answers; anything transient frees the key for a retry.
    try {
      const value = await work(undefined);
      await completeInRedis(redisUrl, scope, key, 200, { ok: true, value: JSON.parse(JSON.stringify(value)) as unknown });
      return value;
    } catch (err) {
      if (err instanceof DomainError && err.httpStatus < 500 && err.httpStatus !== 423) {
        await completeInRedis(redisUrl, scope, key, err.httpStatus, { ok: false, status: err.httpStatus, error: err.toBody() });
      } else {
        await abandonInRedis(redisUrl, scope, key);
      }
      throw err;
    }
  }

  try {
    return await work({ scope, key });
  } catch (err) {
    // A refusal was stored by the statement that decided it; anything else (a lock timeout, a deadlock, a failure)
    // rolled its statement back: free the key for a retry. Only a key still in progress is touched.
    await db().$executeRaw`DELETE FROM idempotency_records WHERE scope = ${scope} AND key = ${key} AND state = 'in_progress'`;
    throw err;
  }
}

/** Drops records past their retention (at least 24 h). */
export async function pruneIdempotencyRecords(): Promise<number> {
  return db().$executeRaw`DELETE FROM idempotency_records WHERE expires_at < now()`;
}
