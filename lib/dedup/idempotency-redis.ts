import { createHash } from 'node:crypto';
import { LuaScript, redisClient, RedisUnavailableError } from '@/lib/leases/redis-client';
import { DomainError } from '@/lib/shared/errors';

/**
 * Idempotency keys in Redis (IDEMPOTENCY_BACKEND=redis): the same record as the Postgres table — which request
 * claimed the key, whether it finished, and its answer — as one Redis key per caller and key, expiring with the
 * retention. The claim makes the same first-or-repeat decision as the dedup store (store.ts), but in a Lua script of
 * its own rather than through `seen`: it must also store the record with the key, read the record a repeat is
 * answered from, and take over a claim whose worker stopped without an answer once its claim lease has run out, as
 * in Postgres — none of which a plain SET NX PX can do in one atomic step.
 *
 * One difference, by nature: Postgres stores the answer in the transaction that commits the work; Redis can only
 * store it after the commit. A crash in between leaves the key claimed until the claim lease runs out, and the
 * retry then does the work again — which the engine recognises as already applied.
 */
/**
 * Redis, holding the idempotency keys, cannot be reached: 503 with Retry-After. Before the work, nothing was done;
 * after it (storing the answer), the work is committed and a retry with the same key is recognised as applied.
 */
export class IdempotencyBackendUnavailableError extends DomainError {
  readonly code = 'idempotency_backend_unavailable';
  readonly httpStatus = 503;
  readonly headers = { 'Retry-After': '1' };
  constructor() {
    super(
      'The idempotency key store (Redis) is unavailable. Repeat the request with the same idempotency key shortly: it is answered from its first outcome, or done once.',
    );
  }
}

async function available<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw err instanceof RedisUnavailableError ? new IdempotencyBackendUnavailableError() : err;
  }
}

export type RedisIdempotencyRecord = {
  operation: string;
  requestHash: string;
  state: 'in_progress' | 'completed';
  responseStatus: number | null;
  responseBody: unknown;
  lockedUntil: number;
};

const keyOf = (scope: string, key: string) => `bridge:idem:${createHash('sha256').update(`${scope}\n${key}`).digest('hex')}`;

// KEYS: record. ARGV: new record (JSON), ttl ms, request hash. Returns 'claimed' or the existing record.
const CLAIM = new LuaScript(`local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local existing = redis.call('GET', KEYS[1])
if existing then
  local r = cjson.decode(existing)
  if not (r.state == 'in_progress' and r.lockedUntil < nowMs and r.requestHash == ARGV[3]) then return existing end
end
local fresh = cjson.decode(ARGV[1])
fresh.lockedUntil = nowMs + fresh.lockedUntil
redis.call('SET', KEYS[1], cjson.encode(fresh), 'PX', ARGV[2])
return 'claimed'`);

// Completes a record still in progress, keeping its expiry. KEYS: record. ARGV: status, body (JSON).
const COMPLETE = new LuaScript(`local existing = redis.call('GET', KEYS[1])
if not existing then return 0 end
local r = cjson.decode(existing)
if r.state ~= 'in_progress' then return 0 end
r.state = 'completed'
r.responseStatus = tonumber(ARGV[1])
-- Kept as JSON text: cjson cannot tell an empty array from an empty object, and would change the answer.
r.responseBody = ARGV[2]
redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')
return 1`);

// Frees a key whose request failed transiently, if still in progress. KEYS: record.
const ABANDON = new LuaScript(`local existing = redis.call('GET', KEYS[1])
if existing and cjson.decode(existing).state == 'in_progress' then redis.call('DEL', KEYS[1]) end
return 1`);

export async function claimInRedis(
  url: string,
  args: { scope: string; key: string; operation: string; requestHash: string; claimLeaseMs: number; ttlMs: number },
): Promise<{ claimed: true } | { claimed: false; record: RedisIdempotencyRecord }> {
  const fresh = { operation: args.operation, requestHash: args.requestHash, state: 'in_progress', responseStatus: null, responseBody: null, lockedUntil: args.claimLeaseMs };
  const reply = await available(async () => CLAIM.run(await redisClient(url), [keyOf(args.scope, args.key)], [JSON.stringify(fresh), args.ttlMs, args.requestHash]));
  if (reply === 'claimed') return { claimed: true };
  const record = JSON.parse(String(reply)) as RedisIdempotencyRecord & { responseBody: string | null };
  return { claimed: false, record: { ...record, responseBody: typeof record.responseBody === 'string' ? JSON.parse(record.responseBody) : null } };
}

export async function completeInRedis(url: string, scope: string, key: string, status: number, body: unknown): Promise<void> {
  await available(async () => COMPLETE.run(await redisClient(url), [keyOf(scope, key)], [status, JSON.stringify(body)]));
}

export async function abandonInRedis(url: string, scope: string, key: string): Promise<void> {
  await available(async () => ABANDON.run(await redisClient(url), [keyOf(scope, key)], []));
}
