import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, updateIntentStatus, reevaluateIntent } from '@/lib/intents/commands';
import { IdempotencyKeyReusedError } from '@/lib/intents/errors';
import { replayHeaders } from '@/lib/intents/idempotency';
import { intentRow, makeIntent, resetDatabase, tester } from '../helpers';
import { withSettings } from '../settings';
import { workerRedisUrl } from '../worker';
import { flushRedis } from './backends';

// This file runs the engine with its idempotency keys in Redis.
const redisUrl = workerRedisUrl();
if (redisUrl) withSettings({ IDEMPOTENCY_BACKEND: 'redis', REDIS_URL: redisUrl });

describe.skipIf(!redisUrl)('idempotency keys in Redis (IDEMPOTENCY_BACKEND=redis)', () => {
  beforeEach(async () => {
    await resetDatabase();
    await flushRedis();
  });

  it('a repeat gets the first answer, marked replayed; another body with the key is refused; nothing in Postgres', async () => {
    const intent = await makeIntent('RECEIVED');
    const first = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'redis-key-1' }, tester);
    const again = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'redis-key-1' }, tester);
    expect(again).toEqual(JSON.parse(JSON.stringify(first)));
    expect(replayHeaders(again)).toEqual({ 'Idempotent-Replayed': 'true' });
    await expect(updateIntentStatus({ id: intent.id, status: 'FAILED', idempotencyKey: 'redis-key-1' }, tester)).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
    const rows = await db().$queryRaw<unknown[]>`SELECT 1 FROM idempotency_records`;
    expect(rows).toHaveLength(0);
  });

  it('10 concurrent repeats of one correction: applied once, everyone gets the same answer', async () => {
    const intent = await makeIntent('PROCESSED');
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => reevaluateIntent({ id: intent.id, diff: { note: 'once' }, source: 's', reason: 'r', idempotencyKey: 'redis-key-2' }, tester)),
    );
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'CORRECTED', version: 3 });
  });

  it('8 concurrent creates with one key make one intent, and everyone gets it', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => createIntent({ payload: { order: 'r-1' }, source: 'svc', idempotencyKey: 'redis-create' }, tester)));
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM intents`;
    expect(Number(n)).toBe(1);
    await expect(createIntent({ payload: { order: 'r-2' }, source: 'svc', idempotencyKey: 'redis-create' }, tester)).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
  });

  it('a refusal is replayed too, empty arrays and all', async () => {
    const intent = await makeIntent('COMPLETED');
    const first = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'redis-key-3' }, tester).catch((e: unknown) => e);
    const again = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'redis-key-3' }, tester).catch((e: unknown) => e);
    expect((again as { toBody(): unknown }).toBody()).toEqual((first as { toBody(): unknown }).toBody());
    expect((first as { details: { allowed: unknown[] } }).details.allowed).toEqual([]);
  });
});
