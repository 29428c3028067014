import { db } from '@/lib/db/client';
import { createIntent, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { InvalidTransitionError } from '@/lib/intents/errors';
import { cancelScheduledRetry } from '@/lib/workers/control';
import { failThroughPipeline } from './demo-failures';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { Actor } from '@/lib/shared/intent-types';

/**
 * Demo data for a fresh console: a few hundred intents spread over every status, with corrections, made through
 * the engine itself so versions, audit events and corrections are consistent. Deterministic (seeded PRNG).
 *
 * Every new RECEIVED intent is queued for the pipeline, and the worker `npm start` runs takes it to COMPLETED within
 * a second. Half of the RECEIVED demo intents are therefore held out of the pipeline (their queued work cancelled,
 * as an operator does on the Workers page), so a new user finds intents waiting in RECEIVED to move by hand; the
 * other half show the pipeline at work. FAILED intents are held out too, and fail through the pipeline after three
 * attempts (demo-failures.ts), so each shows why it failed.
 */
const PATHS: Record<IntentStatus, IntentStatus[]> = {
  RECEIVED: [],
  NORMALIZED: ['NORMALIZED'],
  PROCESSED: ['NORMALIZED', 'PROCESSED'],
  CORRECTED: ['NORMALIZED', 'PROCESSED'],
  COMPLETED: ['NORMALIZED', 'PROCESSED', 'COMPLETED'],
  // FAILED intents fail through the pipeline (demo-failures.ts), so each carries its attempts and their errors.
  FAILED: [],
};

const SOURCES = ['checkout-service', 'billing-sync', 'warehouse-feed', 'partner-api', 'ops-import'];
const OPERATORS: Actor[] = [{ name: 'seed:ana.ops' }, { name: 'seed:ben.ops' }, { name: 'seed:chen.review' }];
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY'];
const KINDS = ['payment', 'refund', 'shipment', 'invoice', 'address_change'];
const CITIES = ['Lisbon', 'Osaka', 'Denver', 'Leeds', 'Porto', 'Kyoto', 'Austin', 'Bristol'];

function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export async function seedDemoData(count = 300, log: (line: string) => void = () => undefined): Promise<number> {
  const rand = prng(42);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const statuses = Object.keys(PATHS) as IntentStatus[];
  let made = 0;
  for (let i = 0; i < count; i++) {
    const kind = pick(KINDS);
    const status = statuses[i % statuses.length];
    const payload = {
      kind,
      reference: `${kind.slice(0, 3).toUpperCase()}-${String(10_000 + i)}`,
      customer: { id: `C${1000 + Math.floor(rand() * 9000)}`, city: pick(CITIES) },
      amount: Math.round(rand() * 100_000) / 100,
      currency: pick(CURRENCIES),
      lines: Math.ceil(rand() * 5),
    };
    const intent = await createIntent({ payload, source: pick(SOURCES) }, pick(OPERATORS));
    for (const step of PATHS[status]) await updateIntentStatus({ id: intent.id, status: step }, pick(OPERATORS));
    if (status === 'RECEIVED' && (i / statuses.length) % 2 === 0) await holdOutOfPipeline(intent.id);
    if (status === 'FAILED') {
      await holdOutOfPipeline(intent.id);
      await failThroughPipeline(intent.id, payload);
    }
    if (status === 'CORRECTED' || (status === 'NORMALIZED' && rand() < 0.3)) {
      await reevaluateIntent(
        { id: intent.id, diff: { amount: Math.round(payload.amount * 0.9 * 100) / 100, adjusted: true }, source: 'review-desk', reason: 'Partner confirmed a 10% discount' },
        { name: 'seed:chen.review' },
      );
    }
    if (status === 'CORRECTED' && rand() < 0.5) {
      await reevaluateIntent(
        { id: intent.id, diff: { customer: { city: pick(CITIES) } }, source: 'address-verifier', reason: 'Address normalised by the verifier' },
        { name: 'svc:address-verifier' },
      );
    }
    made++;
    if (made % 100 === 0) log(`  seeded ${made}/${count} demo intents`);
  }
  return made;
}

/** Cancels the intent's queued work; a worker that already took it (seeding beside running workers) keeps it. */
async function holdOutOfPipeline(id: string): Promise<void> {
  try {
    await cancelScheduledRetry(id, OPERATORS[0]);
  } catch (err) {
    if (!(err instanceof InvalidTransitionError)) throw err;
  }
}

/** True when the database has never held an intent (the audit log is append-only, so this survives deletes). */
export async function isFreshDatabase(): Promise<boolean> {
  const rows = await db().$queryRaw<unknown[]>`SELECT 1 FROM audit_events LIMIT 1`;
  return rows.length === 0;
}
