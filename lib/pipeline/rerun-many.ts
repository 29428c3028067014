import { z } from 'zod';
import { db } from '@/lib/db/client';
import { DomainError } from '@/lib/shared/errors';
import { intentIdSchema } from '@/lib/shared/fields';
import type { Actor } from '@/lib/shared/intent-types';
import { parseInput } from '@/lib/shared/validation';
import { planRerun, rerunFieldsSchema, rerunPipeline, type RerunPlan } from './rerun';
import { selectFailedIntentIds } from './rerun-queries';
import type { PipelineDoor } from './types';

/**
 * Rerun from a step for several FAILED intents at once (the Workers page's failed list): the intents chosen one by
 * one, or every one of the list whose last error contains a text. The plan is made per intent by the same function
 * a single rerun uses, and summed up; the rerun then runs each intent's own rerun, one after the other, on exactly
 * the ids the plan listed (a filter is resolved once, when planning), each under its own execution lock.
 */
export const RERUN_MANY_MAX = 200;

const idsSchema = z.array(intentIdSchema, { error: 'must be an array of intent ids' }).min(1, { error: 'must name at least one intent' }).max(RERUN_MANY_MAX, { error: `must name at most ${RERUN_MANY_MAX} intents` });

export const rerunManyPlanSchema = z.strictObject({
  fromBridge: rerunFieldsSchema.shape.fromBridge,
  /** The intents chosen; without it, every intent of the failed list matching `errorContains` (at most RERUN_MANY_MAX). */
  ids: idsSchema.optional(),
  errorContains: z.string({ error: 'must be text' }).trim().max(200, { error: 'must be at most 200 characters' }).optional(),
});
export type RerunManyPlanInput = z.input<typeof rerunManyPlanSchema>;

export const rerunManySchema = z.strictObject({ ids: idsSchema, fromBridge: rerunFieldsSchema.shape.fromBridge, reason: rerunFieldsSchema.shape.reason });
export type RerunManyInput = z.input<typeof rerunManySchema>;

export type RerunManyPlan = {
  fromBridge: string;
  ids: string[];
  /** Intents that would be rerun, with their plans. */
  plans: RerunPlan[];
  /** Intents that cannot be rerun from this bridge, and why. */
  refused: { intentId: string; code: string; message: string }[];
  /** The plans summed up: how many intents reuse and run each bridge. */
  summary: { bridge: string; reused: number; run: number }[];
};

const failure = (intentId: string, err: unknown) => {
  if (err instanceof DomainError) return { intentId, code: err.code, message: err.message };
  throw err;
};

export async function planRerunMany(input: RerunManyPlanInput, options: { bridges?: readonly string[] } = {}): Promise<RerunManyPlan> {
  const { fromBridge, ids: chosen, errorContains } = parseInput(rerunManyPlanSchema, input);
  const ids = chosen?.map((id) => id.toLowerCase()) ?? (await selectFailedIntentIds(db(), errorContains || null, RERUN_MANY_MAX));
  const plans: RerunPlan[] = [];
  const refused: RerunManyPlan['refused'] = [];
  for (const intentId of ids) {
    try {
      plans.push(await planRerun({ id: intentId, fromBridge }, options));
    } catch (err) {
      // An unknown bridge is the request's fault, not one intent's: it refuses the whole plan.
      if (err instanceof DomainError && err.httpStatus === 400) throw err;
      refused.push(failure(intentId, err));
    }
  }
  const summary = (plans[0]?.steps ?? []).map((s) => ({
    bridge: s.bridge,
    reused: plans.filter((p) => p.steps[s.position]?.action === 'reuse').length,
    run: plans.filter((p) => p.steps[s.position]?.action === 'run').length,
  }));
  return { fromBridge, ids, plans, refused, summary };
}

export type RerunManyResult = {
  results: ({ intentId: string; ok: true; runStatus: string; intentStatus: string } | { intentId: string; ok: false; code: string; message: string })[];
};

/** Reruns each intent in turn; one intent's refusal (locked, changed, not FAILED any more) does not stop the others. */
export async function rerunMany(input: RerunManyInput, actor: Actor, options: { door?: PipelineDoor; bridges?: readonly string[] } = {}): Promise<RerunManyResult> {
  const { ids, fromBridge, reason } = parseInput(rerunManySchema, input);
  const results: RerunManyResult['results'] = [];
  for (const raw of ids) {
    const intentId = raw.toLowerCase();
    try {
      const r = await rerunPipeline({ id: intentId, fromBridge, reason }, actor, options);
      results.push({ intentId, ok: true, runStatus: r.run.status, intentStatus: r.intent.status });
    } catch (err) {
      results.push({ ok: false, ...failure(intentId, err) });
    }
  }
  return { results };
}
