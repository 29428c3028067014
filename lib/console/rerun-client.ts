import { intentKeys } from '@/lib/intents/keys';
import type { RerunPlan } from '@/lib/pipeline/rerun';
import { getJson } from './api-client';

/**
 * Browser-side read of a rerun's plan (GET /api/intents/:id/pipeline/plan): under the intent's detail key, so the
 * live feed's invalidation of the intent makes the plan shown follow the intent (a correction, a status change).
 */
export const rerunKeys = {
  plan: (intentId: string, fromBridge: string) => [...intentKeys.detail(intentId), 'rerun-plan', fromBridge] as const,
};

export const fetchRerunPlan = (intentId: string, fromBridge: string) =>
  getJson<RerunPlan>(`/api/intents/${encodeURIComponent(intentId)}/pipeline/plan?${new URLSearchParams({ fromBridge })}`);
