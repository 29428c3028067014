import pg from 'pg';
import { db } from '@/lib/db/client';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { Actor, Intent } from '@/lib/shared/intent-types';

export const tester: Actor = { name: 'test-runner' };

/**
 * A value handed to a typed domain function as a caller without types (plain JavaScript, a door that skipped its
 * schema) could: the domain validates its input itself, and the tests that check it need to get past the compiler.
 */
export function untyped<T>(value: unknown): T {
  return value as T;
}

/** Empties every table the engine writes (TRUNCATE fires no row triggers, so the append-only audit log allows it). */
export async function resetDatabase(): Promise<void> {
  await db().$executeRaw`TRUNCATE intents, corrections, audit_events, conflict_events, intent_engine_events, idempotency_records, deadlock_events, outcome_counts, lock_wait_buckets, lock_wait_timeouts, intent_outcome_minutes, intent_contention, outbox_events, bulk_batches RESTART IDENTITY CASCADE`;
  await db().$executeRaw`TRUNCATE leases, lease_events, lease_fences, dedup_keys RESTART IDENTITY`;
  await db().$executeRaw`TRUNCATE lock_episodes, lock_episode_intents, lock_episode_samples, lock_episode_storms, lock_episode_totals RESTART IDENTITY`;
  // Pipeline and workers: runs, steps and the work queue go with intents (CASCADE); the registry and stats do not.
  await db().$executeRaw`TRUNCATE workers, worker_stats`;
  await db().$executeRaw`UPDATE worker_control SET paused = false, changed_by = NULL, changed_at = NULL`;
}

const PATH_TO: Record<IntentStatus, IntentStatus[]> = {
  RECEIVED: [],
  NORMALIZED: ['NORMALIZED'],
  PROCESSED: ['NORMALIZED', 'PROCESSED'],
  CORRECTED: ['NORMALIZED', 'PROCESSED', 'CORRECTED'],
  COMPLETED: ['NORMALIZED', 'PROCESSED', 'COMPLETED'],
  FAILED: ['FAILED'],
};

/** Creates an intent and walks it through the state machine to `status`, through the engine itself. */
export async function makeIntent(status: IntentStatus = 'RECEIVED', payload: Record<string, unknown> = { order: 'A-1', amount: 10 }): Promise<Intent> {
  let intent = await createIntent({ payload, source: 'test' }, tester);
  for (const step of PATH_TO[status]) intent = (await updateIntentStatus({ id: intent.id, status: step }, tester)).intent;
  return intent;
}

/** A separate plain connection, for holding locks and transactions open at known points. */
export async function rawClient(applicationName = 'bridge-test:holder'): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: applicationName });
  await client.connect();
  return client;
}


export async function intentRow(id: string) {
  const rows = await db().$queryRaw<{ status: IntentStatus; version: number; payload: Record<string, unknown> }[]>`
    SELECT status::text AS status, version, payload FROM intents WHERE id = ${id}::uuid`;
  return rows[0];
}
