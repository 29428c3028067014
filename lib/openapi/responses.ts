import { z } from 'zod';
import { ALL_SUBJECTS } from '@/lib/events/subjects';
import type { RecentEventsPage } from '@/lib/events/recent';
import type { OutboxStatus } from '@/lib/events/status';
import type { LocksSnapshot } from '@/lib/locks/types';
import type { EpisodePage, EpisodeWithSamples } from '@/lib/locks/history/episodes';
import { INTENT_STATUSES } from '@/lib/shared/intent-states';
import type { AuditEvent, BulkStatusResult, ConflictEvent, Correction, Intent, IntentWithCorrections, ReevaluateResult, UpdateStatusResult } from '@/lib/shared/intent-types';
import type { LockTimeoutDetails } from '@/lib/intents/errors';
import type { RunLockEpisodes } from '@/lib/replay/episodes';
import type { PipelineHistory } from '@/lib/pipeline/types';

/**
 * What the JSON API answers, as Zod schemas: the OpenAPI document's response bodies are generated from these, and
 * the contract test validates every real answer against the document. The engine's TypeScript types stay the
 * source of its shapes; the checks at the bottom of this file make `npm run typecheck` fail when a type gains,
 * loses or changes a field that its schema here does not follow.
 */
const isoTime = z.iso.datetime({ offset: true }).meta({ description: 'ISO 8601 timestamp (UTC)', example: '2026-11-24T09:30:00.000Z' });
const uuid = z.uuid();
const statusEnum = z.enum(INTENT_STATUSES).meta({ id: 'IntentStatus', description: 'Where the intent is in its state machine.' });
const jsonObject = z.record(z.string(), z.unknown()).meta({ description: 'Any JSON object.' });

export const intentSchema = z
  .object({
    id: uuid,
    status: statusEnum,
    payload: jsonObject,
    source: z.string().meta({ description: 'Who created it.' }),
    version: z.int().min(0).meta({ description: 'Starts at 0; every committed change adds exactly one.' }),
    isReplay: z.boolean().meta({ description: 'Created by the contention replay (hidden from lists unless asked for).' }),
    createdAt: isoTime,
    updatedAt: isoTime,
  })
  .meta({ id: 'Intent' });

export const correctionSchema = z
  .object({
    id: z.string(),
    intentId: uuid,
    correctionId: z.string().meta({ description: 'Derived from the intent and the canonical diff: the same correction twice is already applied. A correction applied again after a later change undid it has `@<version it was applied to>` added.' }),
    diff: jsonObject,
    source: z.string(),
    reason: z.string(),
    metadata: jsonObject.nullable(),
    actor: z.string(),
    versionBefore: z.int(),
    versionAfter: z.int(),
    statusBefore: statusEnum,
    statusAfter: statusEnum,
    createdAt: isoTime,
  })
  .meta({ id: 'Correction' });

export const intentWithCorrectionsSchema = intentSchema
  .extend({ corrections: z.array(correctionSchema).meta({ description: 'Oldest first.' }) })
  .meta({ id: 'IntentWithCorrections' });

export const auditEventSchema = z
  .object({
    id: z.string(),
    intentId: uuid.nullable(),
    action: z.string().meta({ description: 'created, status_change, bulk_status_change, correction, backend_cancel, …' }),
    actor: z.string(),
    fromStatus: statusEnum.nullable(),
    toStatus: statusEnum.nullable(),
    versionBefore: z.int().nullable(),
    versionAfter: z.int().nullable(),
    details: z.unknown().meta({ description: 'Any JSON value, or null.' }),
    at: isoTime,
  })
  .meta({ id: 'AuditEvent' });

export const conflictEventSchema = z
  .object({
    id: z.string(),
    intentId: uuid,
    operation: z.string(),
    expectedVersion: z.int(),
    currentVersion: z.int(),
    reason: z.string(),
    actor: z.string(),
    at: isoTime,
  })
  .meta({ id: 'ConflictEvent' });

export const intentListSchema = z
  .object({
    items: z.array(intentSchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'IntentList' });

export const updateStatusResultSchema = z
  .object({
    intent: intentSchema,
    alreadyApplied: z.boolean().meta({ description: 'The intent was already in the requested status because an identical request won the race: nothing changed.' }),
  })
  .meta({ id: 'UpdateStatusResult' });

export const bulkStatusResultSchema = z
  .object({
    intents: z.array(intentSchema),
  })
  .meta({ id: 'BulkStatusResult' });

export const reevaluateResultSchema = z
  .object({
    intentId: uuid,
    status: statusEnum,
    version: z.int(),
    correctionId: z.string(),
    correctionCount: z.int(),
    alreadyApplied: z.boolean(),
    retries: z.int().meta({ description: 'Version conflicts retried before it got through.' }),
  })
  .meta({ id: 'ReevaluateResult' });

export const healthSchema = z.object({ ok: z.literal(true), db: z.literal('up') }).meta({ id: 'Health' });
export const healthDownSchema = z
  .object({
    ok: z.literal(false),
    db: z.literal('down'),
    error: z.object({ code: z.literal('db_unavailable'), message: z.string() }),
  })
  .meta({ id: 'HealthDown' });

export const readinessSchema = z
  .object({
    ready: z.boolean(),
    checks: z.record(z.string(), z.object({ ok: z.boolean(), detail: z.string() })).meta({ description: 'database, migrations, live: each with what was found.' }),
    replicas: z
      .array(
        z.object({
          name: z.string().meta({ description: '`replica-N`: the replica\'s place in DATABASE_READ_URL' }),
          inRotation: z.boolean().meta({ description: 'false: its reads go to the primary until it catches up' }),
          replayLsn: z.string().nullable(),
          lagBytes: z.number().int().nullable().meta({ description: 'WAL the primary has written that the replica has not replayed' }),
          lagMs: z.number().int().nullable().meta({ description: 'how long ago the primary was at the first position the replica has not replayed' }),
          problem: z.string().nullable(),
          checkedAt: z.string().nullable(),
        }),
      )
      .optional()
      .meta({ description: 'Only with read replicas configured. A replica out of rotation does not make the instance unready.' }),
  })
  .meta({ id: 'Readiness' });

const nullableText = z.string().nullable();
export const locksSnapshotSchema = z
  .object({
    takenAt: isoTime,
    tookMs: z.number(),
    limit: z.int(),
    locks: z.array(
      // Loose: the Locks page adds columns for incidents (client, user, wait event, state age) as it needs them.
      z.looseObject({
        pid: z.int(),
        lockType: z.string(),
        mode: z.string(),
        granted: z.boolean(),
        fastpath: z.boolean(),
        relation: nullableText,
        page: z.int().nullable(),
        tuple: z.int().nullable(),
        transactionId: nullableText,
        virtualXid: nullableText,
        objectId: nullableText,
        waitingSince: nullableText,
        applicationName: nullableText,
        state: nullableText,
        query: nullableText,
        xactStart: nullableText,
        intentId: nullableText,
      }),
    ),
    summary: z.object({
      total: z.int(),
      waiting: z.int(),
      shown: z.int(),
      hidden: z.int(),
      hiddenByType: z.array(z.object({ lockType: z.string(), granted: z.boolean(), count: z.int() })),
    }),
    backends: z.array(
      z.looseObject({
        pid: z.int(),
        applicationName: nullableText,
        operation: nullableText,
        actor: nullableText.meta({ description: 'The console user (or token owner, or worker) an engine backend acts for; null for other sessions.' }),
        state: nullableText,
        query: nullableText,
        blockedBy: z.array(z.int()),
        intents: z.array(z.object({ id: z.string(), via: z.enum(['label', 'row-waits', 'row-holds']) })),
      }),
    ),
    allSessions: z.boolean().meta({ description: 'Whether every client session was asked for (`all=true`), not only those in transactions.' }),
    backendsHidden: z.int(),
    tree: z.array(z.looseObject({ pid: z.int(), waitingBehind: z.int(), children: z.array(z.unknown()), hiddenChildren: z.int() })),
    treeHidden: z.int(),
  })
  .meta({ id: 'LocksSnapshot', description: 'pg_locks × pg_stat_activity (top N plus a summary), the blocking tree from pg_blocking_pids, the intent each backend is about.' });

const episodeBackend = z.looseObject({
  pid: z.int(),
  applicationName: nullableText,
  actor: nullableText,
  operation: nullableText,
  user: nullableText,
  state: nullableText,
  query: nullableText.meta({ description: 'Literals masked unless the caller is on-call.' }),
  intents: z.array(z.string()),
});
const episodeShape = {
  id: z.string().meta({ description: 'The episode id (a whole number, as text).' }),
  startedAt: isoTime,
  endedAt: isoTime.nullable().meta({ description: 'Null while the blocking lasts.' }),
  durationMs: z.int().meta({ description: 'To its end, or to the last sample while it lasts.' }),
  lastSeenAt: isoTime,
  samples: z.int(),
  root: episodeBackend.meta({ description: 'The root blocker: pid, application, console actor, database user, client, state, transaction start, query, intents it held.' }),
  waiters: z.array(episodeBackend.extend({ waitingSince: nullableText, firstSeenAt: isoTime, lastSeenAt: isoTime, waitedMs: z.int() })),
  peakWaiters: z.int(),
  peakAt: isoTime,
  peakTree: z.looseObject({ tree: z.array(z.unknown()), backends: z.array(z.unknown()) }),
  intents: z.array(z.object({ id: uuid, role: z.enum(['root', 'waiter']) })),
  locks: z.array(z.object({ lockType: z.string(), mode: z.string(), relation: nullableText, granted: z.boolean() })),
  applications: z.array(z.string()),
  links: z.object({
    lockTimeouts: z.array(z.object({ intentId: uuid, minute: isoTime, operation: z.string(), count: z.int() })),
    deadlocks: z.array(z.object({ id: z.string(), at: isoTime, operation: z.string(), intentIds: z.array(uuid) })),
    unblocks: z.array(z.object({ id: z.string(), at: isoTime, action: z.string(), actor: z.string(), pid: z.int(), signalled: z.boolean().nullable(), intentId: uuid.nullable() })),
  }),
};
export const lockEpisodeSchema = z.object(episodeShape).meta({ id: 'LockEpisode', description: 'A blocking episode: consecutive samples with the same root blocker (pid, backend start, transaction start).' });
export const lockEpisodesSchema = z
  .object({
    items: z.array(lockEpisodeSchema),
    nextCursor: z.string().nullable(),
    storms: z.array(z.object({ minute: isoTime, episodes: z.int(), peakWaiters: z.int(), applications: z.array(z.string()) })).meta({
      description: 'Minutes in which more new root blockers appeared than are written one by one: counted, not listed (first page only).',
    }),
  })
  .meta({ id: 'LockEpisodes' });
export const lockEpisodeWithSamplesSchema = z
  .object({
    ...episodeShape,
    sampleTrees: z.array(z.object({ at: isoTime, waiters: z.int(), tree: z.looseObject({ tree: z.array(z.unknown()), backends: z.array(z.unknown()) }) })).meta({
      description: 'The blocking tree each time it changed, oldest first.',
    }),
  })
  .meta({ id: 'LockEpisodeWithSamples' });

/** Console-only answers: documented by their top-level shape; the console is their one client. */
export const contentionReportSchema = z.looseObject({ window: z.string() }).meta({ id: 'ContentionReport' });
export const intentCountsSchema = z
  .object({
    counts: z.record(statusEnum, z.int()).nullable().meta({ description: 'Per status; lower bounds when `capped`; null when it could not be counted in time.' }),
    total: z.int().nullable().meta({ description: 'All statuses together; `cap` when capped.' }),
    exact: z.boolean().meta({ description: 'Every match counted.' }),
    capped: z.boolean().meta({ description: 'More than `cap` intents match: the counts are lower bounds (shown as "10,000+").' }),
    estimated: z.boolean().meta({ description: "Counting took too long: the planner's estimate, in the proportions of all intents." }),
    cap: z.int(),
  })
  .meta({ id: 'IntentCounts' });
export const replayRunsSchema = z.object({ runs: z.array(z.looseObject({ id: z.string(), status: z.string() })) }).meta({ id: 'ReplayRuns' });
const replayRunLockEpisodesSchema = z
  .object({
    items: z.array(
      z.object({
        id: z.string().meta({ description: 'The episode: `GET /api/locks/episodes/{id}`.' }),
        startedAt: isoTime,
        endedAt: isoTime.nullable(),
        durationMs: z.int(),
        peakWaiters: z.int(),
        waitersSeen: z.int(),
        rootPid: z.int(),
        rootApplication: z.string().nullable(),
        rootOperation: z.string().nullable(),
        intentIds: z.array(z.uuid()).meta({ description: 'The run’s intents it involved (at most 10).' }),
      }),
    ),
    total: z.int(),
    stormMinutes: z
      .array(z.object({ minute: isoTime, episodes: z.int() }))
      .meta({ description: 'Minutes of the run in which the lock history summarised a storm of blockings instead of recording each (tied to no intent).' }),
  })
  .meta({ description: 'The lock episodes the run caused: begun while it ran, involving its own intents (docs/LOCK-HISTORY.md), oldest first, the first 50.' });
export const replayRunSchema = z
  .looseObject({ run: z.looseObject({ id: z.string(), status: z.string() }), lockEpisodes: replayRunLockEpisodesSchema })
  .meta({ id: 'ReplayRun' });

export const outboxStatusSchema = z
  .object({
    relayConfigured: z.boolean().meta({ description: 'Whether the answering console instance has NATS_URL set.' }),
    stream: z
      .object({ name: z.string(), subjects: z.array(z.string()) })
      .meta({ description: 'The JetStream stream and subjects the answering instance publishes to (EVENTS_STREAM, EVENTS_SUBJECT_PREFIX).' }),
    backlog: z.int().meta({ description: 'Events committed but not yet acknowledged by JetStream, counted up to 10,000.' }),
    backlogCapped: z.boolean().meta({ description: 'True when there are more than `backlog` (the count stops at 10,000).' }),
    lagMs: z.int().meta({ description: 'Age of the oldest of them (0 when none).' }),
    oldestUnpublishedAt: isoTime.nullable(),
    publishedLastMinute: z.int(),
    lastPublishedAt: isoTime.nullable(),
    partitions: z.int(),
    relays: z.array(z.object({ pid: z.int(), startedAt: isoTime.nullable(), clientAddr: z.string().nullable(), partitions: z.array(z.int()) })),
  })
  .meta({ id: 'OutboxStatus' });

export const outboxEventSchema = z
  .object({
    id: z.string().regex(/^\d+$/).meta({ description: 'The outbox row’s id (a 64-bit integer, as a string): the order events were written in.', example: '1042' }),
    eventId: uuid.meta({ description: 'The event’s own id, also its message id (`Nats-Msg-Id`): deduplicate on it.' }),
    type: z.enum(ALL_SUBJECTS).meta({ description: 'The event type (the payload’s `type`; the NATS subject before any environment prefix).' }),
    orderingKey: z.string().meta({ description: 'Whose events stay in order: the intent id, or a lock’s resource.' }),
    intentId: uuid.nullable().meta({ description: 'The intent, for `evt.intent.*`; null for lock events.' }),
    createdAt: isoTime,
    publishedAt: isoTime.nullable().meta({ description: 'When JetStream acknowledged it; null while it waits in the outbox.' }),
    streamSeq: z.int().nullable().meta({ description: 'JetStream’s stream sequence, once published.' }),
    payload: jsonObject.meta({ description: 'The message as published (or as it will be): see `x-events`.' }),
  })
  .meta({ id: 'OutboxEvent' });

export const recentEventsPageSchema = z
  .object({
    items: z.array(outboxEventSchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next (older) page; null on the last page.' }),
  })
  .meta({ id: 'OutboxEventsPage' });

export const lockHolderSchema = z
  .object({
    pid: z.int().meta({ description: 'The backend holding the lock.' }),
    applicationName: z.string().nullable(),
    state: z.string().nullable(),
    transactionStartedAt: isoTime.nullable(),
    transactionAgeMs: z.number().nullable().meta({ description: 'How long its transaction had been open when the wait ran out.' }),
    query: z.string().nullable().meta({ description: 'Its current or last statement; literals masked unless the caller may cancel backends.' }),
  })
  .meta({ id: 'LockHolder' });

/** What a 423 `lock_timeout` says besides its message. */
export const lockTimeoutDetailsSchema = z
  .object({
    intentIds: z.array(z.uuid()),
    nowait: z.boolean(),
    lockTimeoutMs: z.int().optional().meta({ description: 'How long it waited (absent with `nowait`).' }),
    refusedWithoutWaiting: z.boolean().optional().meta({ description: 'Refused without waiting: the row was held and enough commands already waited for it.' }),
    holders: z.array(lockHolderSchema).meta({ description: 'Who held the lock, when that could be read (empty when it had just been let go).' }),
    holderPid: z.int().nullable().meta({ description: 'The first holder’s pid (null when none could be named).' }),
    locksPage: z.string().meta({ description: 'The console’s Locks page with that holder selected (`/locks?pid=<pid>`), or the page itself.', example: '/locks?pid=4242' }),
  })
  .meta({ id: 'LockTimeoutDetails' });

/** The API's error envelope with the codes one answer may carry, and what its details say when that is one shape. */
export function errorSchema(codes: readonly [string, ...string[]], details?: z.ZodType) {
  return z.object({
    error: z.object({
      code: z.enum(codes),
      message: z.string().meta({ description: 'For people: what happened and what to do.' }),
      details: (details ?? z.unknown()).optional().meta({ description: 'For programs: the fields refused, the versions, the lock holders, …' }),
    }),
  });
}

const pipelineStepSchema = z.object({
  bridge: z.string(),
  status: z.enum(['running', 'completed', 'failed', 'skipped', 'replayed', 'waiting', 'abandoned', 'released']),
  startedAt: isoTime.nullable(),
  finishedAt: isoTime.nullable(),
  result: z.unknown().optional().meta({ description: 'What the bridge returned (completed and replayed steps).' }),
  error: z.string().optional().meta({ description: 'Why the step failed: the error the bridge raised, with its code.' }),
});

/** A bridge's wait for an answer from outside (lib/pipeline/waits.ts). */
export const pipelineWaitSchema = z
  .object({
    id: z.string(),
    intentId: uuid,
    round: z.int().min(1),
    bridge: z.string(),
    name: z.string().meta({ description: 'What an answer names (`POST /api/intents/{id}/pipeline/answers`).' }),
    prompt: z.string().nullable().meta({ description: 'What it waits for, in words.' }),
    state: z.enum(['waiting', 'answered', 'timed_out', 'cancelled']),
    deadline: isoTime,
    onTimeout: z.enum(['fail', 'retry', 'continue']).meta({ description: 'What a missed deadline does: fail the intent, fail the attempt (the next asks again), or go on with the default.' }),
    answerSchema: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: 'What an answer’s `body` must look like, as JSON Schema, when the bridge says; a body that does not match is refused with 400 naming the field. Null: any JSON object.' }),
    answer: z.unknown().meta({ description: 'The answer that decided it (null until then).' }),
    answeredBy: z.string().nullable(),
    decidedAt: isoTime.nullable(),
    resumedAt: isoTime.nullable().meta({ description: 'When the run that consumed the decision resumed.' }),
    createdAt: isoTime,
  })
  .meta({ id: 'PipelineWait' });

export const pipelineHistorySchema = z
  .object({
    runs: z
      .array(
        z.object({
          id: uuid,
          intentId: uuid,
          round: z.int().min(1).meta({ description: 'A move back to RECEIVED (an operator’s retry) starts the next round.' }),
          attempt: z.int().min(1).meta({ description: 'The run’s attempt within its round: 1 for the first. A run that resumes after a wait keeps the attempt of the run that stopped to wait (a wait is not an attempt).' }),
          mode: z.enum(['FAILFAST', 'CONTINUE']),
          status: z.enum(['running', 'succeeded', 'failed', 'finished_with_errors', 'interrupted', 'waiting', 'abandoned', 'released']),
          door: z.enum(['api', 'console', 'worker']),
          actor: z.string(),
          startedAt: isoTime,
          finishedAt: isoTime.nullable(),
          error: z.string().optional().meta({ description: 'The run’s failures, one per failed bridge (`bridge: error`), or why it was abandoned.' }),
          steps: z.array(pipelineStepSchema),
          wait: pipelineWaitSchema
            .optional()
            .meta({ description: 'On a run whose status is `waiting` (it ended by suspending at a wait, and keeps that status): the wait it stopped at, as it is now — still `waiting`, `answered`, `timed_out`, or `cancelled` because the intent left the round (a run resumed after an answer is a newer run).' }),
        }),
      )
      .meta({ description: 'Newest first.' }),
    failure: z
      .object({
        at: isoTime,
        actor: z.string(),
        from: statusEnum.nullable(),
        version: z.int().nullable(),
        reason: z.string().nullable().meta({ description: 'The reason recorded with the change (a pipeline’s names the failing bridge and its error).' }),
      })
      .nullable()
      .meta({ description: 'While the intent is FAILED: the status change that failed it. Null otherwise.' }),
    waits: z.array(pipelineWaitSchema).meta({ description: 'What its bridges waited for, newest first, the open wait (if any) first.' }),
  })
  .meta({ id: 'PipelineHistory' });

// ── The engine's types and these schemas must agree: same fields, and every value the type allows is valid. ──
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : { onlyInType: Exclude<keyof A, keyof B>; onlyInSchema: Exclude<keyof B, keyof A> };
type Fits<T, S extends z.ZodType> = T extends z.input<S> ? SameKeys<T, z.input<S>> : 'the type allows values the schema refuses';
const agree = <_T extends true>() => undefined;
agree<Fits<Intent, typeof intentSchema>>();
agree<Fits<Correction, typeof correctionSchema>>();
agree<Fits<IntentWithCorrections, typeof intentWithCorrectionsSchema>>();
agree<Fits<AuditEvent, typeof auditEventSchema>>();
agree<Fits<ConflictEvent, typeof conflictEventSchema>>();
agree<Fits<UpdateStatusResult, typeof updateStatusResultSchema>>();
agree<Fits<Omit<BulkStatusResult, 'alreadyApplied'>, typeof bulkStatusResultSchema>>();
agree<Fits<ReevaluateResult, typeof reevaluateResultSchema>>();
agree<SameKeys<LocksSnapshot, z.input<typeof locksSnapshotSchema>>>();
agree<SameKeys<EpisodeWithSamples, z.input<typeof lockEpisodeWithSamplesSchema>>>();
agree<SameKeys<EpisodePage, z.input<typeof lockEpisodesSchema>>>();
agree<Fits<OutboxStatus, typeof outboxStatusSchema>>();
agree<SameKeys<RecentEventsPage['items'][number], z.input<typeof outboxEventSchema>>>();
agree<Fits<LockTimeoutDetails, typeof lockTimeoutDetailsSchema>>();
agree<Fits<RunLockEpisodes, typeof replayRunLockEpisodesSchema>>();
agree<Fits<PipelineHistory, typeof pipelineHistorySchema>>();

/** Fencing tokens are bigint in the database and in Redis; on the wire they are JSON integers, exact up to 2^53 - 1. */
const fencingToken = z.int().min(1).max(Number.MAX_SAFE_INTEGER);
export const leaseGrantedSchema = z
  .object({
    acquired: z.literal(true),
    token: fencingToken.meta({ description: 'The fencing token: pass it with the writes this lease protects. It is the only token those writes are accepted with until the resource is granted again.' }),
    expiresAt: z.string(),
  })
  .meta({ id: 'LeaseGranted' });
export const leaseRefreshedSchema = z.object({ refreshed: z.literal(true), token: fencingToken, expiresAt: z.string() }).meta({ id: 'LeaseRefreshed' });
export const leaseReleasedSchema = z.object({ released: z.literal(true) }).meta({ id: 'LeaseReleased' });
const leaseBackendName = z.enum(['postgres', 'redis']);
export const leasesListSchema = z
  .object({
    backend: leaseBackendName,
    leases: z.array(
      z.object({
        resource: z.string(),
        owner: z.string().meta({ description: 'The name the lease is held under (chosen by whoever took it).' }),
        actor: z.string().nullable().meta({ description: 'The user who took it (with their session or one of their API tokens).' }),
        token: fencingToken.nullable().meta({ description: 'Null for callers without the leases.use permission (viewers).' }),
        acquiredAt: z.string().nullable(),
        expiresAt: z.string(),
        backend: leaseBackendName,
      }),
    ),
    events: z.array(
      z.object({
        id: z.string(),
        resource: z.string(),
        backend: leaseBackendName,
        event: z.enum(['acquired', 'denied', 'refreshed', 'released', 'expired']),
        owner: z.string().nullable(),
        holder: z.string().nullable(),
        actor: z.string().nullable().meta({ description: 'The user who acted; `system` when nobody did (an expiry).' }),
        token: fencingToken.nullable().meta({ description: 'Null for callers without the leases.use permission (viewers), and for denials.' }),
        expiresAt: z.string().nullable(),
        at: z.string(),
      }),
    ),
  })
  .meta({ id: 'Leases' });
