import { db, type Db } from '@/lib/db/client';
import { recordGrant, recordLeaseEvents, type NewLeaseEvent } from './events';
import { LeaseBackendUnavailableError } from './errors';
import { LuaScript, redisClient, RedisUnavailableError, type Redis } from './redis-client';
import { tokenNumber } from './token';
import { SYSTEM_CALLER, type AcquireResult, type LeaseBackend, type LeaseCaller, type LiveLease, type RefreshResult, type ReleaseResult } from './types';

/**
 * Leases in Redis (LEASE_BACKEND=redis): `SET holder NX PX ttl` for the lease, the holder's value compared inside Lua
 * scripts before extending or deleting it, fencing tokens from `INCR` on a per-resource counter. Redis' own clock
 * (its TTL and TIME) judges expiry. Events still go to Postgres, where the console and the metrics read them.
 *
 * The holder's value is `<token>:<owner>`. The token is unique per resource (INCR), which is what a random value
 * is for in the usual recipe: no two grants of one resource share a value, so a holder whose lease expired can
 * neither extend nor delete its successor's. A restart that loses the counter cannot repeat old tokens either: a
 * missing counter is seeded from Postgres (the highest token accepted by a fenced write, and the highest granted),
 * and the fence in Postgres refuses any token lower than one a write accepted, whatever Redis says.
 *
 * Keys: bridge:lease:holder:<resource> (the lease), bridge:lease:token:<resource> (the counter), and two shared
 * ones — bridge:leases:live (sorted set resource → expiry ms) and bridge:leases:granted (hash resource → the grant
 * not yet released) — that let expiry be noticed: a grant still there when its lease key is gone ran out.
 */
const PREFIX = 'bridge:lease:';
const HOLDER = `${PREFIX}holder:`;
const TOKEN = `${PREFIX}token:`;
const LIVE = 'bridge:leases:live';
const GRANTED = 'bridge:leases:granted';

const NOW_MS = `local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)`;

// KEYS: holder, counter, live, granted. ARGV: resource, owner, ttlMs, counter floor ('' when not read yet), the
// caller's credential and name. The token is read back with GET after INCR: Lua's numbers are doubles printed with
// 14 digits, so the counter's own decimal text is what goes into the holder value and the grant.
const ACQUIRE = new LuaScript(`${NOW_MS}
local current = redis.call('GET', KEYS[1])
if current then
  return {'denied', current, nowMs + redis.call('PTTL', KEYS[1]), nowMs}
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  if ARGV[4] == '' then return {'seed'} end
  redis.call('SET', KEYS[2], ARGV[4])
end
redis.call('INCR', KEYS[2])
local token = redis.call('GET', KEYS[2])
local value = token .. ':' .. ARGV[2]
redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[3])
local expiresAt = nowMs + tonumber(ARGV[3])
local previous = redis.call('HGET', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[3], expiresAt, ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], cjson.encode({token = token, owner = ARGV[2], expiresAt = expiresAt, acquiredAt = nowMs, by = ARGV[5], actor = ARGV[6]}))
return {'acquired', token, expiresAt, nowMs, previous}`);

// Moves a counter that fell behind (an old snapshot restored) above what Postgres has seen. KEYS: counter. ARGV: floor.
const RAISE_COUNTER = new LuaScript(`local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if c < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`);

// The grant's credential against the caller's: a grant recorded before leases were bound to callers has none and
// matches anyone. Defines the locals grant, g and theirs for the script that includes it (ARGV[1] is the resource).
const theirs = (granted: string, credential: string) => `local grant = redis.call('HGET', ${granted}, ARGV[1])
local g = grant and cjson.decode(grant) or nil
local theirs = (g == nil) or (g.by == nil) or (g.by == ${credential})`;

// Compare-and-extend. KEYS: holder, live, granted. ARGV: resource, expected value, ttlMs, credential.
// Returns the new expiry (ms); -1 when the value is not the holder's, -2 when another credential took the lease.
const REFRESH = new LuaScript(`if redis.call('GET', KEYS[1]) ~= ARGV[2] then return -1 end
${theirs('KEYS[3]', 'ARGV[4]')}
if not theirs then return -2 end
${NOW_MS}
local expiresAt = nowMs + tonumber(ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], expiresAt, ARGV[1])
if g then
  g.expiresAt = expiresAt
  redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(g))
end
return expiresAt`);

// Compare-and-delete. KEYS: holder, live, granted. ARGV: resource, expected value, credential, '1' when the caller may
// release any lease. Returns the release time (ms); 0 when the value is not the holder's, -2 when another
// credential took the lease.
const RELEASE = new LuaScript(`if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
${theirs('KEYS[3]', 'ARGV[3]')}
if not theirs and ARGV[4] ~= '1' then return -2 end
${NOW_MS}
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return nowMs`);

// Grants whose lease key is gone. KEYS: live, granted. ARGV: holder key prefix, limit.
const SWEEP = new LuaScript(`${NOW_MS}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', nowMs, 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, resource in ipairs(due) do
  if redis.call('EXISTS', ARGV[1] .. resource) == 0 then
    local grant = redis.call('HGET', KEYS[2], resource)
    redis.call('ZREM', KEYS[1], resource)
    redis.call('HDEL', KEYS[2], resource)
    if grant then
      table.insert(out, resource)
      table.insert(out, grant)
    end
  end
end
return out`);

// Live grants, soonest expiry first. KEYS: live, granted. ARGV: limit, and a resource to look up alone ('' for all).
const LIVE_GRANTS = new LuaScript(`${NOW_MS}
local rs
if ARGV[2] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
  rs = (score and tonumber(score) > nowMs) and { ARGV[2] } or {}
else
  rs = redis.call('ZRANGEBYSCORE', KEYS[1], nowMs + 1, '+inf', 'LIMIT', 0, tonumber(ARGV[1]))
end
local out = {}
for _, resource in ipairs(rs) do
  local grant = redis.call('HGET', KEYS[2], resource)
  if grant then
    table.insert(out, resource)
    table.insert(out, grant)
  end
end
return out`);

/** A grant as the hash keeps it; `token` is the counter's decimal text (a number in grants of older versions). */
type Grant = { token: string | number; owner: string; expiresAt: number; acquiredAt?: number; by?: string; actor?: string };

/**
 * The Redis half alone — no events, no fence — for tests that hammer the scripts themselves. `floor` seeds a
 * missing counter; without it a missing counter answers 'seed'.
 */
export const redisLeaseScripts = {
  grant: (redis: Redis, resource: string, owner: string, ttlMs: number, floor?: number, caller: LeaseCaller = SYSTEM_CALLER) =>
    ACQUIRE.run(redis, [HOLDER + resource, TOKEN + resource, LIVE, GRANTED], [resource, owner, ttlMs, floor ?? '', caller.credential, caller.actor]) as Promise<unknown[]>,
  /**
   * The release time (ms) when `<token>:<owner>` held the lease and it was deleted; 0 when it was not theirs; -2
   * when another credential took it (and `caller` may not release any).
   */
  compareAndDelete: async (redis: Redis, resource: string, owner: string, token: number, caller: LeaseCaller = SYSTEM_CALLER) =>
    Number(await RELEASE.run(redis, [HOLDER + resource, LIVE, GRANTED], [resource, holderValue(token, owner), caller.credential, caller.mayReleaseAny ? '1' : '0'])),
  holderKey: (resource: string) => HOLDER + resource,
};
const iso = (ms: number) => new Date(ms).toISOString();

/** Redis being away, as the lease manager answers it: 503 `lease_backend_unavailable` (with Retry-After). */
async function available<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw err instanceof RedisUnavailableError ? new LeaseBackendUnavailableError() : err;
  }
}
const holderValue = (token: number, owner: string) => `${token}:${owner}`;
const ownerOf = (value: string) => value.slice(value.indexOf(':') + 1);

export class RedisLeases implements LeaseBackend {
  readonly name = 'redis' as const;

  constructor(
    private readonly url: string,
    private readonly pg: () => Db = db,
  ) {}

  private client(): Promise<Redis> {
    return redisClient(this.url);
  }

  /** The lowest value a fresh counter may start from: above every token granted or accepted for the resource. */
  private async counterFloor(resource: string): Promise<number> {
    const rows = await this.pg().$queryRaw<{ floor: bigint }[]>`
      SELECT greatest(
        (SELECT token FROM lease_fences WHERE resource = ${resource}),
        (SELECT max(token) FROM lease_events WHERE resource = ${resource}),
        (SELECT token FROM leases WHERE resource = ${resource}),
        0) AS floor`;
    return tokenNumber(rows[0].floor);
  }

  acquire(resource: string, owner: string, ttlMs: number, caller: LeaseCaller = SYSTEM_CALLER): Promise<AcquireResult> {
    return available(() => this.grant(resource, owner, ttlMs, caller, false));
  }

  refresh(resource: string, owner: string, token: number, ttlMs: number, caller: LeaseCaller = SYSTEM_CALLER): Promise<RefreshResult> {
    return available(() => this.extend(resource, owner, token, ttlMs, caller));
  }

  release(resource: string, owner: string, token: number, caller: LeaseCaller = SYSTEM_CALLER): Promise<ReleaseResult> {
    return available(() => this.free(resource, owner, token, caller));
  }

  live(limit: number, resource?: string): Promise<LiveLease[]> {
    return available(() => this.list(limit, resource));
  }

  sweep(): Promise<number> {
    return available(() => this.sweepExpired());
  }

  private async grant(resource: string, owner: string, ttlMs: number, caller: LeaseCaller, retried: boolean): Promise<AcquireResult> {
    const redis = await this.client();
    let reply = await redisLeaseScripts.grant(redis, resource, owner, ttlMs, undefined, caller);
    if (reply[0] === 'seed') reply = await redisLeaseScripts.grant(redis, resource, owner, ttlMs, await this.counterFloor(resource), caller);
    if (reply[0] === 'denied') {
      const holder = ownerOf(String(reply[1]));
      const expiresAt = iso(Number(reply[2]));
      const held = tokenNumber(String(reply[1]).split(':')[0]);
      await recordLeaseEvents('redis', [{ resource, event: 'denied', owner, holder, actor: caller.actor, token: held, expiresAt, at: iso(Number(reply[3])) }], this.pg());
      return { acquired: false, owner: holder, expiresAt };
    }
    const token = tokenNumber(String(reply[1]));
    const expiresAt = iso(Number(reply[2]));
    const at = iso(Number(reply[3]));
    const events: NewLeaseEvent[] = [];
    if (reply[4]) {
      const previous = JSON.parse(String(reply[4])) as Grant;
      events.push({ resource, event: 'expired', owner: previous.owner, actor: 'system', token: tokenNumber(previous.token), expiresAt: iso(previous.expiresAt), at });
    }
    events.push({ resource, event: 'acquired', owner, actor: caller.actor, token, expiresAt, at });
    // The grant advances the fence in Postgres, so writes by earlier holders are refused from now on. Refused when
    // Postgres has seen a higher token: Redis' counter fell behind (a restore from an old snapshot).
    if (!(await recordGrant('redis', resource, token, events, this.pg()))) {
      await redisLeaseScripts.compareAndDelete(redis, resource, owner, token, caller);
      if (retried) throw new Error(`the Redis lease counter of ${resource} stays behind Postgres' fence`);
      await RAISE_COUNTER.run(redis, [TOKEN + resource], [await this.counterFloor(resource)]);
      return this.grant(resource, owner, ttlMs, caller, true);
    }
    return { acquired: true, token, expiresAt };
  }

  private async extend(resource: string, owner: string, token: number, ttlMs: number, caller: LeaseCaller): Promise<RefreshResult> {
    const redis = await this.client();
    const reply = Number(await REFRESH.run(redis, [HOLDER + resource, LIVE, GRANTED], [resource, holderValue(token, owner), ttlMs, caller.credential]));
    if (reply < 0) return { refreshed: false, reason: reply === -2 ? 'not_yours' : 'not_held' };
    const expiresAt = iso(reply);
    await recordLeaseEvents('redis', [{ resource, event: 'refreshed', owner, actor: caller.actor, token, expiresAt, at: iso(reply - ttlMs) }], this.pg());
    return { refreshed: true, expiresAt };
  }

  private async free(resource: string, owner: string, token: number, caller: LeaseCaller): Promise<ReleaseResult> {
    const redis = await this.client();
    const releasedAt = await redisLeaseScripts.compareAndDelete(redis, resource, owner, token, caller);
    if (releasedAt <= 0) return { released: false, reason: releasedAt === -2 ? 'not_yours' : 'not_held' };
    // Like the Postgres backend, a released lease's expiry is the moment it was released.
    await recordLeaseEvents('redis', [{ resource, event: 'released', owner, actor: caller.actor, token, expiresAt: iso(releasedAt), at: iso(releasedAt) }], this.pg());
    return { released: true };
  }

  private async list(limit: number, resource = ''): Promise<LiveLease[]> {
    const redis = await this.client();
    const reply = (await LIVE_GRANTS.run(redis, [LIVE, GRANTED], [limit, resource])) as string[];
    const leases: LiveLease[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const g = JSON.parse(reply[i + 1]) as Grant;
      leases.push({ resource: reply[i], owner: g.owner, actor: g.actor ?? null, token: tokenNumber(g.token), acquiredAt: g.acquiredAt ? iso(g.acquiredAt) : null, expiresAt: iso(g.expiresAt), backend: 'redis' });
    }
    return leases;
  }

  private async sweepExpired(): Promise<number> {
    const redis = await this.client();
    const reply = (await SWEEP.run(redis, [LIVE, GRANTED], [HOLDER, 1000])) as string[];
    const events: NewLeaseEvent[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const g = JSON.parse(reply[i + 1]) as Grant;
      events.push({ resource: reply[i], event: 'expired', owner: g.owner, actor: 'system', token: tokenNumber(g.token), expiresAt: iso(g.expiresAt) });
    }
    await recordLeaseEvents('redis', events, this.pg());
    return events.length;
  }
}
