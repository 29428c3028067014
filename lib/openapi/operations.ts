import { z } from 'zod';
import type { Permission } from '@/lib/auth/permissions';
import { contentionQuerySchema } from '@/lib/contention/queries';
import { bulkStatusSchema, countIntentsQuerySchema, createIntentSchema, listIntentsSchema, reevaluateSchema, updateStatusSchema } from '@/lib/intents/schemas';
import { intentIdSchema } from '@/lib/shared/fields';
import { acquireBodySchema, leaseResourceSchema, listLeasesSchema, refreshBodySchema, releaseBodySchema } from '@/lib/leases/schemas';
import { snapshotOptionsSchema } from '@/lib/locks/queries';
import { holdersQuerySchema } from '@/lib/locks/holders';
import { episodeIdSchema, episodesQuerySchema } from '@/lib/locks/history/episodes';
import { auditQuerySchema } from '@/lib/audit/log';
import { recentEventsQuerySchema } from '@/lib/events/recent';
import { compareQuerySchema } from '@/lib/replay/compare';
import { baselineInputSchema } from '@/lib/replay/pinning';
import { pipelineRequestSchema, rerunPlanQuerySchema } from '@/lib/pipeline/rerun';
import { answerBodySchema } from '@/lib/pipeline/waits';
import { consoleReplaySchema } from '@/lib/replay/runner';
import { positionSchema } from '@/lib/live/positions';
import { timelinePageSchema, timelineQuerySchema } from '@/lib/timeline/types';
import { workersPausedSchema } from '@/lib/workers/control';
import { intentRefSchema } from '@/lib/search/ids';
import {
  auditEventSchema,
  bulkStatusResultSchema,
  conflictEventSchema,
  contentionReportSchema,
  healthDownSchema,
  healthSchema,
  intentCountsSchema,
  intentListSchema,
  intentSchema,
  intentWithCorrectionsSchema,
  leaseGrantedSchema,
  leaseRefreshedSchema,
  leaseReleasedSchema,
  leasesListSchema,
  locksSnapshotSchema,
  lockEpisodeWithSamplesSchema,
  lockEpisodesSchema,
  readinessSchema,
  outboxStatusSchema,
  recentEventsPageSchema,
  reevaluateResultSchema,
  replayRunSchema,
  replayRunsSchema,
  updateStatusResultSchema,
  pipelineHistorySchema,
} from './responses';

/**
 * Every operation of the JSON API, described with the very Zod schemas its route validates with (request) and the
 * response schemas of ./responses.ts. The OpenAPI document (./document.ts) is generated from this table, and the
 * JSON API's router (lib/http/api-router.ts) routes by it: each operation's method, path and permission are enforced
 * as written here. The contract test (test/contract) calls every operation listed here through that router.
 *
 * `errors` lists, per status, every error `code` the operation can answer beyond the ones every operation of its
 * kind shares (added by the document: 401/403 for authenticated operations, 400/413 for operations with a body).
 */
export type ErrorCodes = readonly [string, ...string[]];

export type ApiOperation = {
  operationId: string;
  method: 'get' | 'post';
  /** OpenAPI path template: `/api/intents/{id}`. */
  path: string;
  summary: string;
  description?: string;
  tag: 'intents' | 'operations' | 'console' | 'meta';
  /** `bearer`: a token (or the console's session cookie); `open`: no credentials; `metrics`: open unless METRICS_TOKEN is set. */
  auth: 'bearer' | 'open' | 'metrics';
  permission?: Permission;
  pathParams?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  success: { status: 200 | 201 | 202; description: string; schema?: z.ZodType; contentType?: string; headers?: Record<string, z.ZodType> };
  errors: Partial<Record<number, ErrorCodes>>;
  /** Answers that are not the error envelope (the health check's 503). */
  otherResponses?: Record<number, { description: string; schema: z.ZodType }>;
  /** A 400 that no schema can foresee (it depends on the data), said in the 400's description. */
  dataDependent400?: string;
  /**
   * Takes an idempotency key, as the body's `idempotencyKey` or the `Idempotency-Key` header: answers replayed from
   * its first request carry `Idempotent-Replayed: true`.
   */
  idempotent?: boolean;
};

/** The read paths also take the first 8+ characters of an id, when only one intent starts so (lib/search/ids.ts). */
const intentRefParams = z.object({
  id: intentRefSchema.meta({ description: 'The intent id (a UUID), or its first 8 or more characters as the console shows them when only one intent starts so (several: 400 `ambiguous_id` listing candidates).', example: '0b7f7c9e' }),
});

export const intentIdParams = z.object({
  id: intentIdSchema.meta({ description: 'The intent id (a UUID).', example: '0b7f7c9e-4a55-4d39-9d7e-2f3c1b8a9e10' }),
});

const leaseParams = z.object({
  resource: leaseResourceSchema.meta({ description: 'What the lease is for: any name the callers agree on (an intent id, a repository, a job), except names starting with `worker-claim:` (the workers’ own fences).', example: 'report:2026-11' }),
});

const LEASE_OPERATIONS: ApiOperation[] = [
  {
    operationId: 'listLeases',
    method: 'get',
    path: '/api/leases',
    summary: 'Live leases and the newest lease events',
    tag: 'operations',
    auth: 'bearer',
    permission: 'locks.read',
    query: listLeasesSchema,
    description: 'Owners and the users who took or touched each lease are shown to everyone who may read locks; fencing tokens only to callers with `leases.use` (for viewers they are null).',
    success: { status: 200, description: 'Live leases (soonest expiry first) and recent events.', schema: leasesListSchema },
    errors: { 400: ['invalid_request'], 503: ['lease_backend_unavailable'] },
  },
  {
    operationId: 'acquireLease',
    method: 'post',
    path: '/api/leases/{resource}/acquire',
    summary: 'Acquire a lease (never waits)',
    description: 'Grants the lease with a fencing token that only grows, or refuses at once (409 `lease_denied` naming the holder and its expiry). Expiry is judged by the server’s clock. The lease is bound to the credential that took it (your API token, or you when signed in): only it refreshes or releases it. A reviewer’s edit lease (`intent:<id>:edit`) is taken under your own user name only (403 `lease_not_yours` otherwise).',
    tag: 'operations',
    auth: 'bearer',
    permission: 'leases.use',
    pathParams: leaseParams,
    body: acquireBodySchema,
    success: { status: 200, description: 'The lease is yours until `expiresAt`.', schema: leaseGrantedSchema },
    errors: { 403: ['lease_not_yours'], 409: ['lease_denied'], 503: ['lease_backend_unavailable'] },
  },
  {
    operationId: 'refreshLease',
    method: 'post',
    path: '/api/leases/{resource}/refresh',
    summary: 'Extend a lease you hold',
    description: 'Only the credential that acquired the lease (the same API token, or the same user signed in) refreshes it, with its owner and current token: anyone else gets 403 `lease_not_yours`.',
    tag: 'operations',
    auth: 'bearer',
    permission: 'leases.use',
    pathParams: leaseParams,
    body: refreshBodySchema,
    success: { status: 200, description: 'The lease now runs until `expiresAt`.', schema: leaseRefreshedSchema },
    errors: { 403: ['lease_not_yours'], 409: ['lease_not_held'], 503: ['lease_backend_unavailable'] },
  },
  {
    operationId: 'releaseLease',
    method: 'post',
    path: '/api/leases/{resource}/release',
    summary: 'Release a lease you hold',
    description: 'Only the holder’s current token releases; a stale token is refused with 409 `lease_not_held`. Only the credential that acquired the lease releases it, or an admin (`leases.release_any`; the release event names the admin); anyone else gets 403 `lease_not_yours`.',
    tag: 'operations',
    auth: 'bearer',
    permission: 'leases.use',
    pathParams: leaseParams,
    body: releaseBodySchema,
    success: { status: 200, description: 'Released.', schema: leaseReleasedSchema },
    errors: { 403: ['lease_not_yours'], 409: ['lease_not_held'], 503: ['lease_backend_unavailable'] },
  },
];

const CONSOLE_AND_WORKER_OPERATIONS: ApiOperation[] = [
  {
    operationId: 'runPipeline',
    method: 'post',
    path: '/api/intents/{id}/pipeline',
    summary: 'Run the BridgeSet pipeline on an intent, or rerun it from a step',
    description:
      'Input → Normalize → Feedback → Output under a NOWAIT execution lock: a second concurrent run is refused at once with 423 `lock_timeout` naming the holder. FAILFAST (the default) fails the intent at the first failing bridge; CONTINUE records the failure and goes on. With `fencing: { resource, token }` the run is refused at its start (409 `fencing_token_stale`, nothing recorded) unless the token is the resource’s current grant (the one its lease acquire answered, not yet superseded), and every change its bridges make carries the same fence: a run whose lease passed to another holder mid-run stops with 409 `fencing_token_stale`.\n\n**Rerun from a step**: with `fromBridge` (and a required `reason`), a FAILED or stuck intent runs again from that bridge as a new round: the steps before it are reused from the latest run (recorded as `replayed`, not run), the intent is moved back (through FAILED → RECEIVED, then forward) to the status that bridge started at, and the bridges from it on run. The plan it follows is the one `GET /api/intents/{id}/pipeline/plan` answers, made again under the execution lock; pass that plan’s `intent.version` as `expectedVersion` to be refused (409 `version_conflict`) if the intent changed since. The answer carries the `plan` beside the run. An unknown bridge or a missing reason is 400 naming the field; a step before `fromBridge` the latest run did not finish is 409 `rerun_refused`.',
    tag: 'intents',
    auth: 'bearer',
    permission: 'pipeline.run',
    pathParams: intentIdParams,
    body: pipelineRequestSchema,
    dataDependent400: 'A `fromBridge` that names no bridge of the configured BridgeSet (`PIPELINE_BRIDGES`) is 400 `invalid_request` naming the field: the set is configuration, not part of this document.',
    success: { status: 200, description: 'The intent after the run, and the run with its steps.', schema: z.looseObject({ intent: z.looseObject({ id: z.string() }), run: z.looseObject({ id: z.string(), mode: z.string(), status: z.string(), steps: z.array(z.looseObject({ bridge: z.string(), status: z.string() })) }) }).meta({ id: 'PipelineResult' }) },
    errors: { 404: ['not_found'], 409: ['invalid_transition', 'version_conflict', 'fencing_token_stale', 'rerun_refused'], 423: ['lock_timeout'], 503: ['deadlock', 'cancelled'] },
  },
  {
    operationId: 'answerPipelineWait',
    method: 'post',
    path: '/api/intents/{id}/pipeline/answers',
    summary: 'Answer what a bridge of the intent’s pipeline waits for',
    description:
      'A bridge may suspend its run to wait for an answer from outside (another service’s callback, a person’s decision), by name, until a deadline; meanwhile the intent holds no worker. This answers the intent’s latest wait of that `name` with `body` (a JSON object): the first answer decides it and makes the intent due again, and a worker resumes the run from that bridge, which gets the body. Every answer is recorded and audited (`wait_answered`) with its outcome. Exactly one answer decides a wait, however many arrive at once: the same body again is 200 with `outcome: "already_applied"`; a different body after it is 409 `answer_conflict`; an answer after the wait was decided otherwise — its deadline fired (the workers fire deadlines by the database’s clock) or the intent left the pipeline — is 409 `wait_closed`. None of those changes anything. No wait of that name on the intent is 404. A wait whose bridge declared the answer’s shape (`answerSchema` on the wait, JSON Schema) refuses a body that does not match it with 400 naming each field (`body.approved`), before anything is recorded.',
    tag: 'intents',
    auth: 'bearer',
    permission: 'pipeline.run',
    pathParams: intentIdParams,
    body: answerBodySchema,
    success: {
      status: 200,
      description: 'The wait as the answer left it: `accepted` (this answer decided it) or `already_applied` (the same answer had).',
      schema: z
        .object({
          outcome: z.enum(['accepted', 'already_applied']),
          wait: z.looseObject({ id: z.string(), intentId: z.string(), name: z.string(), bridge: z.string(), state: z.string(), deadline: z.string(), onTimeout: z.enum(['fail', 'retry', 'continue']) }),
        })
        .meta({ id: 'WaitAnswerResult' }),
    },
    errors: { 404: ['not_found'], 409: ['answer_conflict', 'wait_closed'] },
  },
  {
    operationId: 'planPipelineRerun',
    method: 'get',
    path: '/api/intents/{id}/pipeline/plan',
    summary: 'The plan of a rerun from a step, before running it',
    description:
      'What `POST /api/intents/{id}/pipeline` with `{ fromBridge, reason }` would do now: the steps reused from the latest run (with their recorded results), the bridges that run again and what each may change (status moves, corrections, events sent out — as each bridge declares), the status moves made before the first bridge runs, the round, and the intent (status, version, payload) the plan was made on. Nothing is changed. The rerun itself follows the same plan, made again under the execution lock.',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.read',
    pathParams: intentRefParams,
    query: rerunPlanQuerySchema,
    dataDependent400: 'A `fromBridge` that names no bridge of the configured BridgeSet (`PIPELINE_BRIDGES`) is 400 `invalid_request` naming the field: the set is configuration, not part of this document.',
    success: {
      status: 200,
      description: 'The plan.',
      schema: z
        .looseObject({
          intentId: z.string(),
          fromBridge: z.string(),
          round: z.number(),
          moves: z.array(z.array(z.string())),
          steps: z.array(z.looseObject({ bridge: z.string(), action: z.enum(['reuse', 'run']) })),
        })
        .meta({ id: 'RerunPlan' }),
    },
    errors: { 400: ['invalid_request', 'ambiguous_id'], 404: ['not_found'], 409: ['invalid_transition', 'rerun_refused'], 423: ['lock_timeout'] },
  },
  {
    operationId: 'listPipelineRuns',
    method: 'get',
    path: '/api/intents/{id}/pipeline',
    summary: 'The latest pipeline runs of an intent, with their steps, and why a FAILED intent failed',
    description:
      'Each run with its attempt (numbered within its round; a run resumed after a wait keeps the attempt it continues) and every step’s result or error. While the intent is FAILED, `failure` is the status change that failed it: who, when, from which status and the reason recorded with it.',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.read',
    pathParams: intentRefParams,
    success: { status: 200, description: 'Runs, newest first, and the failure.', schema: pipelineHistorySchema },
    errors: { 400: ['invalid_request', 'ambiguous_id'], 404: ['not_found'] },
  },
  {
    operationId: 'getWorkers',
    method: 'get',
    path: '/api/workers',
    summary: 'Workers and the queue',
    description: 'Every registered worker process with its heartbeat and claims, and the queue by state.',
    tag: 'operations',
    auth: 'bearer',
    permission: 'intents.read',
    success: { status: 200, description: 'Workers and queue depth.', schema: z.looseObject({ workers: z.array(z.looseObject({})), queue: z.looseObject({}) }).meta({ id: 'WorkersOverview' }) },
    errors: {},
  },
  {
    operationId: 'setWorkersClaiming',
    method: 'post',
    path: '/api/workers/claiming',
    summary: 'Pause or resume claiming for every worker',
    description: 'While paused, no worker claims new work: new intents wait in RECEIVED (so a person can move one by hand); runs already in flight finish. Audited as `workers_paused` / `workers_resumed`.',
    tag: 'operations',
    auth: 'bearer',
    permission: 'pipeline.run',
    body: workersPausedSchema,
    success: { status: 200, description: 'Claiming as it is now; `changed` is false when it already was.', schema: z.object({ paused: z.boolean(), changed: z.boolean() }).meta({ id: 'WorkersClaiming' }) },
    errors: {},
  },
  {
    operationId: 'listAudit',
    method: 'get',
    path: '/api/audit',
    summary: 'The global audit log',
    description: 'Every action (status changes, bulk batches, corrections, unblocks, sign-ins, user and token changes), newest first, one keyset page at a time.',
    tag: 'operations',
    auth: 'bearer',
    permission: 'audit.read',
    query: auditQuerySchema,
    success: { status: 200, description: 'One page of audit entries.', schema: z.looseObject({ items: z.array(z.looseObject({})), nextCursor: z.string().nullable() }).meta({ id: 'AuditPage' }) },
    errors: { 400: ['invalid_request'] },
  },
  {
    operationId: 'getRowLockHolders',
    method: 'get',
    path: '/api/console/locks/holders',
    summary: 'Which of these intents are locked now, and by whom',
    tag: 'console',
    auth: 'bearer',
    permission: 'locks.read',
    query: holdersQuerySchema,
    success: { status: 200, description: 'The backends holding these intents’ rows.', schema: z.object({ holders: z.array(z.looseObject({})) }).meta({ id: 'RowLockHolders' }) },
    errors: { 400: ['invalid_request'], 503: ['db_under_pressure'] },
  },
];

const CORRECTION_CONFLICTS = ['version_conflict', 'invalid_transition', 'idempotency_in_progress', 'fencing_token_stale'] as const;

/** What makes valid-looking list and count filters a 400: only the combination of values can tell. */
const FILTER_400 =
  'A `q` that is neither an id, an id prefix nor a source searches the payload and needs at least 3 characters per search term; `to` must not be before `from` (and `contentionTo` not before `contentionFrom`); `contentionOperation`, `contentionFrom` and `contentionTo` need `contention`.';

export const OPERATIONS: ApiOperation[] = [
  {
    operationId: 'createIntent',
    method: 'post',
    path: '/api/intents',
    summary: 'Create an intent',
    description:
      'Creates an intent in status RECEIVED at version 0. With an idempotency key (`idempotencyKey` or the `Idempotency-Key` header) a repeat — a retry after a lost answer or a 503 — answers 201 with the intent the first request created, as it was created, and creates nothing.',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.create',
    body: createIntentSchema,
    success: {
      status: 201,
      description: 'The intent as created.',
      schema: intentSchema,
      headers: { Location: z.string().meta({ description: 'The new intent: `/api/intents/{id}`.' }) },
    },
    errors: { 409: ['idempotency_in_progress'], 422: ['idempotency_key_reused'], 503: ['idempotency_backend_unavailable'] },
    idempotent: true,
  },
  {
    operationId: 'listIntents',
    dataDependent400: FILTER_400,
    method: 'get',
    path: '/api/intents',
    summary: 'List intents',
    description: 'Newest update first, in keyset pages. `q` takes a whole or short intent id, a source, payload text as the console shows it (`city: Osaka`) or a JSON fragment; `source`, `from` and `to` narrow further. `contention` (one of the Contention page\'s figures: `conflicts`, `deadlocks`, `lockTimeouts`, `retries`, `alreadyApplied`) keeps the intents that met it, optionally in one operation (`contentionOperation`, e.g. `update_status`) and between `contentionFrom` and `contentionTo` (when it happened; kept a week). A payload search too broad to answer quickly is refused with 422 `search_too_slow`.',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.read',
    query: listIntentsSchema,
    success: { status: 200, description: 'One page of intents.', schema: intentListSchema },
    errors: { 400: ['invalid_request'], 422: ['search_too_slow'] },
  },
  {
    operationId: 'getIntent',
    method: 'get',
    path: '/api/intents/{id}',
    summary: 'Read one intent with its corrections',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.read',
    pathParams: intentRefParams,
    success: { status: 200, description: 'The intent with `corrections[]`, oldest first.', schema: intentWithCorrectionsSchema },
    errors: { 400: ['invalid_request', 'ambiguous_id'], 404: ['not_found'] },
  },
  {
    operationId: 'updateIntentStatus',
    method: 'post',
    path: '/api/intents/{id}/status',
    summary: 'Move an intent to another status',
    description:
      'Pessimistic: takes the row lock (waits up to the lock timeout, or fails at once with `nowait`). With `expectedVersion` the change is refused (409 `version_conflict`, recorded as a conflict event) when the intent moved on. A repeat of a request that already won answers `alreadyApplied: true` and changes nothing. With `fencing: { resource, token }` (a lease, see /api/leases) the change is accepted only with the resource’s current grant: a superseded or never-granted token is refused with 409 `fencing_token_stale` and moves nothing. Resources starting with `worker-claim:` are reserved (400).',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.status',
    pathParams: intentIdParams,
    body: updateStatusSchema,
    success: { status: 200, description: 'The intent after the change.', schema: updateStatusResultSchema },
    errors: {
      404: ['not_found'],
      409: ['invalid_transition', 'version_conflict', 'idempotency_in_progress', 'fencing_token_stale'],
      422: ['idempotency_key_reused'],
      423: ['lock_timeout'],
      503: ['deadlock', 'cancelled', 'idempotency_backend_unavailable'],
    },
    idempotent: true,
  },
  {
    operationId: 'bulkUpdateStatus',
    method: 'post',
    path: '/api/intents/bulk-status',
    summary: 'Move several intents to one status, all or nothing',
    description: 'Locks the intents in id order (no deadlocks between bulk updates); refuses the whole request when one intent cannot move (409 naming each such intent, each of them audited as a refused status change; no intent changes).',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.bulk',
    body: bulkStatusSchema,
    success: { status: 200, description: 'The intents after the change.', schema: bulkStatusResultSchema },
    errors: { 404: ['not_found'], 409: ['invalid_transition'], 423: ['lock_timeout'], 503: ['deadlock', 'cancelled'] },
  },
  {
    operationId: 'reevaluateIntent',
    method: 'post',
    path: '/api/intents/{id}/reeval',
    summary: 'Apply a correction (re-evaluation)',
    description:
      'Deep-merges `diff` into the payload; PROCESSED becomes CORRECTED. Optimistic with retries, then a locked attempt. Refused on COMPLETED and FAILED intents (409 `invalid_transition`). The correction id is derived from the intent and the canonical diff: the same correction twice answers `alreadyApplied: true`. Sent again with `expectedVersion` after a later change undid it (setting a field back), it is applied as a new correction with the id `<first id>@<version>`. With `fencing: { resource, token }` the correction is accepted only with the resource’s current grant: a superseded or never-granted token is refused with 409 `fencing_token_stale` and moves nothing. Resources starting with `worker-claim:` are reserved (400).',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.correct',
    pathParams: intentIdParams,
    body: reevaluateSchema,
    success: { status: 200, description: 'What the correction did.', schema: reevaluateResultSchema },
    errors: {
      404: ['not_found'],
      409: CORRECTION_CONFLICTS,
      422: ['idempotency_key_reused'],
      423: ['lock_timeout'],
      503: ['retries_exhausted', 'deadlock', 'cancelled', 'idempotency_backend_unavailable'],
    },
    idempotent: true,
  },
  {
    operationId: 'getIntentAudit',
    method: 'get',
    path: '/api/intents/{id}/audit',
    summary: "An intent's audit events",
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.read',
    pathParams: intentRefParams,
    success: { status: 200, description: 'Audit events, oldest first.', schema: z.array(auditEventSchema) },
    errors: { 400: ['invalid_request', 'ambiguous_id'], 404: ['not_found'] },
  },
  {
    operationId: 'getIntentTimeline',
    method: 'get',
    path: '/api/intents/{id}/timeline',
    summary: "An intent's timeline",
    description:
      'Everything that happened to the intent, oldest first, in one list: creation, status changes (with reason and actor), corrections, conflicts, idempotent repeats, pipeline runs and steps, lease grants, denials, releases and expiries of its edit lease and worker claim, fenced writes accepted or refused, events sent out (with the JetStream stream sequence once acknowledged), lock waits of 10 ms or more and lock timeouts the engine saw, blocking episodes of the lock history it was part of, and unblocks of a backend that held it or that it waited behind. Entries written in one transaction keep their write order. Each entry links to where it lives in the console. Long histories come a page at a time (`limit`, `cursor`).',
    tag: 'intents',
    auth: 'bearer',
    permission: 'intents.read',
    pathParams: intentRefParams,
    query: timelineQuerySchema,
    success: { status: 200, description: 'One page of the timeline, oldest first.', schema: timelinePageSchema },
    errors: { 400: ['invalid_request'], 404: ['not_found'] },
  },
  {
    operationId: 'getLocks',
    method: 'get',
    path: '/api/locks',
    summary: 'Active locks and waits',
    tag: 'operations',
    auth: 'bearer',
    permission: 'locks.read',
    query: snapshotOptionsSchema,
    success: { status: 200, description: 'The snapshot.', schema: locksSnapshotSchema },
    errors: { 400: ['invalid_request'], 503: ['db_under_pressure'] },
  },
  {
    operationId: 'listLockEpisodes',
    method: 'get',
    path: '/api/locks/episodes',
    summary: 'Blocking episodes the lock history kept',
    description:
      'Newest first, in keyset pages. An episode is what one root blocker (pid, backend start, transaction start) made others wait for, sampled about once a second while anything waits: its root, every waiter seen, the intents, the peak tree, the locks, and the lock timeouts, deadlocks and unblocks inside it. `from`/`to` keep the episodes overlapping that window; `intentId`, `application` (a prefix of any backend\'s application name) and `minDurationMs` narrow further. Blockings shorter than a sample may be missed (docs/LOCKING.md).',
    tag: 'operations',
    auth: 'bearer',
    permission: 'locks.read',
    query: episodesQuerySchema,
    success: { status: 200, description: 'One page of episodes.', schema: lockEpisodesSchema },
    errors: { 400: ['invalid_request'] },
  },
  {
    operationId: 'getLockEpisode',
    method: 'get',
    path: '/api/locks/episodes/{id}',
    summary: 'One blocking episode, with the tree at each sample',
    tag: 'operations',
    auth: 'bearer',
    permission: 'locks.read',
    pathParams: episodeIdSchema,
    success: { status: 200, description: 'The episode and the blocking tree each time it changed.', schema: lockEpisodeWithSamplesSchema },
    errors: { 400: ['invalid_request'], 404: ['not_found'] },
  },
  {
    operationId: 'getMetrics',
    method: 'get',
    path: '/api/metrics',
    summary: 'Prometheus metrics',
    description: 'Open, unless the server sets METRICS_TOKEN: then `Authorization: Bearer <METRICS_TOKEN>`.',
    tag: 'operations',
    auth: 'metrics',
    success: { status: 200, description: 'Prometheus text exposition format.', contentType: 'text/plain', schema: z.string() },
    errors: { 401: ['unauthenticated'] },
  },
  {
    operationId: 'getHealth',
    method: 'get',
    path: '/api/health',
    summary: 'Liveness and database reachability',
    tag: 'operations',
    auth: 'open',
    success: { status: 200, description: 'Up.', schema: healthSchema },
    errors: {},
    otherResponses: { 503: { description: 'The database is not reachable.', schema: healthDownSchema } },
  },
  {
    operationId: 'getReadiness',
    method: 'get',
    path: '/api/ready',
    summary: 'Readiness: database, migrations, live feed',
    description: 'For a load balancer deciding whether to send traffic here (liveness is /api/health). Says which check failed.',
    tag: 'operations',
    auth: 'open',
    success: { status: 200, description: 'Ready.', schema: readinessSchema },
    errors: {},
    otherResponses: { 503: { description: 'Not ready: `checks` says which check failed.', schema: readinessSchema } },
  },
  {
    operationId: 'getEvents',
    method: 'get',
    path: '/api/events',
    summary: 'Live changes (server-sent events)',
    description:
      'A `text/event-stream` of every committed change. Event ids are database positions: reconnect with `Last-Event-ID` (or `?since=`) to resume without missing anything. `event: changes` carries `{ events: [{ id, intentId, action, toStatus, lsn }], counts? }`; `event: reset` (`{ lsn?, counts? }`) asks to refetch everything. `lsn` is the primary’s WAL position at or past the commit of the changes: with read replicas, send it as `Bridge-Read-After` on the reads the event makes you do, and they show the change (from a replica that has replayed it, else from the primary).',
    tag: 'console',
    auth: 'bearer',
    permission: 'intents.read',
    query: z.object({ since: positionSchema.optional().meta({ description: 'A position to resume from (an event id this stream gave out). The `Last-Event-ID` header wins; a header that is not a position is ignored, a `since` that is not one is refused with 400.' }) }),
    success: { status: 200, description: 'The stream.', contentType: 'text/event-stream', schema: z.string() },
    errors: { 429: ['too_many_streams'] },
  },
  {
    operationId: 'getOpenApiDocument',
    method: 'get',
    path: '/api/openapi.json',
    summary: 'This document',
    tag: 'meta',
    auth: 'open',
    success: { status: 200, description: 'The OpenAPI 3.1 document of this API.', schema: z.looseObject({ openapi: z.string() }) },
    errors: {},
  },
  {
    operationId: 'getContentionReport',
    method: 'get',
    path: '/api/console/contention',
    summary: "The Contention page's series",
    tag: 'console',
    auth: 'bearer',
    permission: 'contention.read',
    query: contentionQuerySchema,
    success: { status: 200, description: 'Chart-ready series for the window.', schema: contentionReportSchema },
    errors: { 400: ['invalid_request'], 503: ['db_under_pressure'] },
  },
  {
    operationId: 'countIntents',
    dataDependent400: FILTER_400,
    method: 'get',
    path: '/api/console/intents/counts',
    summary: 'Intents per status under a search',
    tag: 'console',
    auth: 'bearer',
    permission: 'intents.read',
    query: countIntentsQuerySchema,
    success: { status: 200, description: 'Counts per status: exact, capped or estimated, as it says.', schema: intentCountsSchema },
    errors: { 400: ['invalid_request'] },
  },
  {
    operationId: 'getIntentConflicts',
    method: 'get',
    path: '/api/console/intents/{id}/conflicts',
    summary: 'The version conflicts recorded for an intent',
    tag: 'console',
    auth: 'bearer',
    permission: 'intents.read',
    pathParams: intentIdParams,
    success: { status: 200, description: 'Conflict events, oldest first.', schema: z.array(conflictEventSchema) },
    errors: { 400: ['invalid_request'], 404: ['not_found'] },
  },
  {
    operationId: 'getOutboxStatus',
    method: 'get',
    path: '/api/console/events',
    summary: 'Events out: the relay’s backlog, lag and relays',
    tag: 'console',
    auth: 'bearer',
    permission: 'intents.read',
    success: { status: 200, description: 'The outbox as the relays see it.', schema: outboxStatusSchema },
    errors: {},
  },
  {
    operationId: 'listOutboxEvents',
    method: 'get',
    path: '/api/console/events/recent',
    summary: 'Events out: the most recent events, published or waiting',
    description:
      'The outbox’s events, newest first (in the order they were written), in keyset pages: `type` keeps one event type, `intent` one intent’s events, `state` only the events JetStream acknowledged (`published`, with their stream sequence) or only those still waiting for a relay (`waiting`). Published events are kept `OUTBOX_RETENTION_HOURS` (72 by default). Each item carries the message as published (see `x-events`).',
    tag: 'console',
    auth: 'bearer',
    permission: 'intents.read',
    query: recentEventsQuerySchema,
    success: { status: 200, description: 'One page of events, newest first.', schema: recentEventsPageSchema },
    errors: { 400: ['invalid_request'] },
  },
  {
    operationId: 'listReplayRuns',
    method: 'get',
    path: '/api/console/replay/runs',
    summary: 'The latest contention-replay runs',
    tag: 'console',
    auth: 'bearer',
    permission: 'replay.read',
    success: { status: 200, description: 'Run summaries, newest first.', schema: replayRunsSchema },
    errors: {},
  },
  {
    operationId: 'getReplayRun',
    method: 'get',
    path: '/api/console/replay/runs/{id}',
    summary: 'One contention-replay run with its comparison',
    tag: 'console',
    auth: 'bearer',
    permission: 'replay.read',
    description:
      'The run is compared with the run named by `against` when given, else with the pinned baseline when it fits (an earlier run of the same size with a scenario in common), else with the previous comparable run (the latest earlier finished run of the same size with a scenario in common). `comparedWith` says which and, when the pinned baseline was not used, why; `candidates` lists the earlier runs `against` may name.',
    pathParams: z.object({ id: z.uuid().meta({ description: 'The run id.' }) }),
    query: compareQuerySchema.extend({ against: compareQuerySchema.shape.against.meta({ description: 'An earlier finished run with a scenario in common to compare with, instead of the default.' }) }),
    success: { status: 200, description: 'The run, its progress and results, and the comparison with the run it is compared with.', schema: replayRunSchema },
    errors: { 400: ['invalid_request'], 404: ['not_found'] },
    dataDependent400: 'An `against` that is not an earlier finished run with a scenario in common with this one.',
  },
  {
    operationId: 'startReplay',
    method: 'post',
    path: '/api/replay/runs',
    summary: 'Start a contention replay',
    description:
      'Runs the chosen scenarios (`all` by default) against this environment’s engine and database, at `full` size (the one the targets are set for) or `small` (a smoke run), with the configured lock strategies or ones chosen for this run. Staging and development only (403 `replay_disabled` in production); one run at a time across every console instance (409 `replay_in_progress`). The run goes on in the background: poll `GET /api/console/replay/runs/{id}` (the Location) for progress, verdicts and the comparison with the previous run.',
    tag: 'operations',
    auth: 'bearer',
    permission: 'replay.run',
    body: consoleReplaySchema,
    success: {
      status: 202,
      description: 'The run as started.',
      schema: z.object({ run: z.looseObject({ id: z.string(), status: z.string() }) }).meta({ id: 'ReplayStarted' }),
      headers: { Location: z.string().meta({ description: 'The run: `/api/console/replay/runs/{id}`.' }) },
    },
    errors: { 403: ['replay_disabled'], 409: ['replay_in_progress'] },
  },
  {
    operationId: 'cancelReplay',
    method: 'post',
    path: '/api/replay/runs/{id}/cancel',
    summary: 'Cancel a running contention replay',
    description: 'The run stops between steps and is recorded as cancelled, with the scenarios it finished.',
    tag: 'operations',
    auth: 'bearer',
    permission: 'replay.run',
    pathParams: z.object({ id: z.uuid().meta({ description: 'The run id.' }) }),
    success: { status: 200, description: 'The cancel was asked for.', schema: z.object({ runId: z.string() }).meta({ id: 'ReplayCancelRequested' }) },
    errors: { 400: ['invalid_request'], 404: ['not_found'], 409: ['replay_not_running'] },
  },
  {
    operationId: 'setReplayBaseline',
    method: 'post',
    path: '/api/replay/runs/{id}/baseline',
    summary: 'Pin or unpin a run as the baseline later runs are compared with',
    description:
      'With `pinned: true` the run (a finished one: 409 `replay_not_finished` otherwise) becomes the baseline: later runs of the same size with a scenario in common are compared with it instead of with the run before them. One baseline at a time: pinning another run moves the pin. `pinned: false` unpins it (a run that is not the baseline is left as it is: `changed: false`). Audited, with the optional `note`.',
    tag: 'operations',
    auth: 'bearer',
    permission: 'replay.run',
    pathParams: z.object({ id: z.uuid().meta({ description: 'The run id.' }) }),
    body: baselineInputSchema.omit({ id: true }),
    success: {
      status: 200,
      description: 'The baseline after the change, and whether anything changed.',
      schema: z
        .object({
          baseline: z.object({ runId: z.string(), pinnedAt: z.string(), pinnedBy: z.string(), note: z.string().nullable() }).nullable(),
          changed: z.boolean(),
        })
        .meta({ id: 'ReplayBaselineChange' }),
    },
    errors: { 404: ['not_found'], 409: ['replay_not_finished'] },
  },
  ...LEASE_OPERATIONS,
  ...CONSOLE_AND_WORKER_OPERATIONS,
];

/** Answers every operation of a kind may give, added to each operation's own `errors`. */
export function sharedErrors(op: ApiOperation): Partial<Record<number, ErrorCodes>> {
  const shared: Partial<Record<number, ErrorCodes>> = {};
  if (op.auth === 'bearer') {
    shared[401] = ['unauthenticated'];
    shared[403] = ['forbidden', 'csrf_rejected', 'password_change_required'];
    // The connection to the database lost mid-request (restart, failover), or the database too busy to answer in
    // time: nothing half-applied, repeat it.
    shared[503] = ['database_unavailable', 'db_under_pressure'];
  }
  // Any request may be refused for its query (a parameter the operation does not list, or one given twice) or for a
  // path the front door cannot read, whether or not the operation takes a body.
  shared[400] = ['invalid_request'];
  if (op.body) shared[413] = ['payload_too_large'];
  return shared;
}

/** Every status and error code an operation may answer: its own and the shared ones. */
export function operationErrors(op: ApiOperation): Record<number, ErrorCodes> {
  const all: Record<number, string[]> = {};
  for (const source of [sharedErrors(op), op.errors]) {
    for (const [status, codes] of Object.entries(source)) {
      const list = (all[Number(status)] ??= []);
      for (const code of codes ?? []) if (!list.includes(code)) list.push(code);
    }
  }
  return all as unknown as Record<number, ErrorCodes>;
}
