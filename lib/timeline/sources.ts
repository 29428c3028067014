import { Prisma } from '@/generated/prisma/client';
import { auditActionLabel } from '@/lib/audit/actions';
import { auditHref } from '@/lib/audit/url';
import type { Tx } from '@/lib/db/client';
import { ValidationError } from '@/lib/shared/errors';
import { editLeaseResource, isEditLeaseResource } from '@/lib/leases/edit-names';
import { CLAIM_FENCE_PREFIX } from '@/lib/leases/schemas';
import { operationLabel } from '@/lib/contention/series';
import { formatDuration } from '@/lib/locks/format';
import { formatUtc } from '@/lib/shared/time';
import { episodesForIntent, type IntentEpisode } from '@/lib/locks/history/episodes';
import type { TimelineEntry, TimelineKind } from './types';

/**
 * Where the intent timeline's entries come from: one source per table (or per reading of one), each reading the
 * intent's rows after its own cursor key, oldest first, through an index on the intent (or its resources), and
 * turning them into entries. A new kind of history is one more source in TIMELINE_SOURCES.
 *
 * Order: rows written since the timeline existed carry `write_seq`, drawn from one sequence as each row is written
 * (prisma/migrations/…_intent_timeline): the entries of one transaction keep their write order (a lock wait before
 * the write it delayed, an audit row before the event its trigger sent), and the transactions that change one
 * intent, serialised by its row lock, keep theirs. Each source reads its rows in that order too (its cursor key).
 * Older rows, and sources that only know a time, are placed by their time (timeline.ts).
 */
export type SourcedEntry = {
  entry: TimelineEntry;
  /** The source's own cursor key, `<write_seq>:<id>`: the entries of one source come in this order. */
  key: string;
  seq: bigint | null;
  atMs: number;
  /** Entries of one row: the lower first (a fenced write's acceptance before the write). */
  tie: number;
};

export type SourceQuery = { intentId: string; after: string | null; limit: number; tx: Tx };

export type TimelineSource = {
  name: string;
  kinds: readonly TimelineKind[];
  load(q: SourceQuery): Promise<SourcedEntry[]>;
};

type Base = { id: string; at: Date; seq: string | null };

function sourced(row: Base, entry: Omit<TimelineEntry, 'at' | 'position'>, tie = 1): SourcedEntry {
  const seq = row.seq === null ? null : BigInt(row.seq);
  const atMs = row.at.getTime();
  return { key: `${seq ?? 0}:${row.id}`, seq, atMs, tie, entry: { at: row.at.toISOString(), position: seq === null ? `t${atMs}` : `w${seq}`, ...entry } };
}

/**
 * Rows after the source's cursor key `<write_seq>:<id>` (0 for rows from before write_seq). The key follows the
 * write order, not the id: two statements can draw their ids in one order and their positions in the other.
 */
function cursorKey(key: string | null): { seq: bigint; id: bigint } | null {
  if (key === null) return null;
  const match = /^(\d{1,19}):(\d{1,19})$/.exec(key);
  const [seq, id] = match ? [BigInt(match[1]), BigInt(match[2])] : [-1n, -1n];
  if (seq < 0n || id < 0n || seq > BIGINT_MAX || id > BIGINT_MAX) throw new ValidationError([{ field: 'cursor', message: 'is not a timeline cursor' }]);
  return { seq, id };
}

function after(key: string | null): Prisma.Sql {
  const k = cursorKey(key);
  if (k === null) return Prisma.sql``;
  return Prisma.sql`AND (coalesce(write_seq, 0), id) > (${k.seq.toString()}::bigint, ${k.id.toString()}::bigint)`;
}

const BIGINT_MAX = 2n ** 63n - 1n;

const IN_WRITE_ORDER = Prisma.sql`ORDER BY coalesce(write_seq, 0), id`;

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
/** A moment recorded in an entry's details, written as everywhere in the console ("2026-11-29 19:30:36 UTC"). */
const moment = (v: unknown): string => (typeof v === 'string' && Number.isFinite(Date.parse(v)) ? formatUtc(v) : (str(v) ?? '?'));
const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

// ── audit_events: creation, status changes, pipeline runs and steps, unblocks ────────────────────────────────────

type AuditRow = Base & { action: string; actor: string; fromStatus: string | null; toStatus: string | null; versionBefore: number | null; versionAfter: number | null; details: unknown };

const AUDIT_COLUMNS = Prisma.sql`id::text AS id, action, actor, from_status::text AS "fromStatus", to_status::text AS "toStatus",
  version_before AS "versionBefore", version_after AS "versionAfter", details, at, write_seq::text AS seq`;

const UNBLOCK_ACTIONS = ['backend_cancel', 'backend_terminate'];
/** The Locks page's guards refused to stop a backend holding this intent (audited like an accepted stop). */
const REFUSED_UNBLOCK_ACTIONS = ['backend_cancel_refused', 'backend_terminate_refused'];

function unblockEntry(r: AuditRow, intentId: string, role: 'holder' | 'waiter'): SourcedEntry {
  const d = obj(r.details);
  const verb = r.action.startsWith('backend_cancel') ? 'cancelled' : 'terminated';
  const signalled = d.signalled !== false;
  const refused = REFUSED_UNBLOCK_ACTIONS.includes(r.action) ? str(obj(d.refused).message) ?? 'refused' : null;
  const what = refused !== null ? `not ${verb}: ${refused}` : signalled ? verb : `not ${verb} (it had gone)`;
  return sourced(r, {
    kind: 'unblock',
    summary: `Backend ${String(d.pid ?? '?')} ${what} from the Locks page${role === 'holder' ? ': it held this intent' : ': this intent waited behind it'}`,
    actor: r.actor,
    link: auditHref({ intent: intentId, action: r.action }),
    details: { action: r.action, role, pid: d.pid ?? null, reason: str(d.reason), signalled, waitingBehind: d.waitingBehind ?? null },
  });
}

function auditEntry(r: AuditRow, intentId: string): SourcedEntry {
  const d = obj(r.details);
  const link = auditHref({ intent: intentId, action: r.action });
  const versions = { versionBefore: r.versionBefore, versionAfter: r.versionAfter };
  switch (r.action) {
    case 'created':
      return sourced(r, { kind: 'created', summary: `Created as ${r.toStatus}`, actor: r.actor, link, details: { status: r.toStatus, ...versions } });
    case 'status_change':
    case 'bulk_status_change': {
      const bulk = r.action === 'bulk_status_change';
      const reason = str(d.reason);
      const moved = r.fromStatus !== r.toStatus;
      return sourced(r, {
        kind: 'status_change',
        summary: `${moved ? `${r.fromStatus} → ${r.toStatus}` : `${r.toStatus} again`}${bulk ? ' (bulk)' : ''}${reason ? `: “${reason}”` : ''}`,
        actor: r.actor,
        link,
        details: { from: r.fromStatus, to: r.toStatus, ...versions, reason, bulk, batchId: d.batchId ?? null, fencing: d.fencing ?? null },
      });
    }
    case 'status_change_refused': {
      // Asked for and refused: nothing moved, so the summary says so before anything else.
      const reason = str(d.reason);
      const bulk = typeof d.batchSize === 'number';
      return sourced(r, {
        kind: 'status_change',
        summary: `Refused${bulk ? ' in a bulk change, which moved none of its intents' : ''}: ${str(d.from) ?? '?'} → ${str(d.to) ?? '?'} (${str(d.why) ?? 'not a transition'})${reason ? `: “${reason}”` : ''}`,
        actor: r.actor,
        link,
        details: { refused: true, from: str(d.from), to: str(d.to), version: d.version ?? null, why: str(d.why), reason, bulk, batchSize: d.batchSize ?? null, batchId: d.batchId ?? null },
      });
    }
    case 'pipeline_started':
      return sourced(r, { kind: 'pipeline_run', summary: `Pipeline run started (${str(d.mode) ?? '?'}, from ${str(d.door) ?? '?'})`, actor: r.actor, link: `/intents/${intentId}#pipeline-runs`, details: { phase: 'started', ...d } });
    case 'pipeline_finished':
      return sourced(r, { kind: 'pipeline_run', summary: `Pipeline run ${(str(d.status) ?? 'finished').replace(/_/g, ' ')}${str(d.error) ? `: ${str(d.error)}` : ''}`, actor: r.actor, link: `/intents/${intentId}#pipeline-runs`, details: { phase: 'finished', ...d } });
    case 'retry_now':
    case 'cancel_retry': {
      // An operator's hand on the intent's place in the workers' queue (the Workers page): part of its pipeline's story.
      const attempt = typeof d.attempt === 'number' && d.attempt > 0 ? `, after attempt ${d.attempt}` : '';
      return sourced(r, { kind: 'pipeline_run', summary: `${auditActionLabel(r.action)}${attempt}`, actor: r.actor, link, details: { action: r.action, ...d } });
    }
    case 'pipeline_released':
      return sourced(r, { kind: 'pipeline_run', summary: 'Pipeline run given back before it started: its worker was stopping', actor: r.actor, link: `/intents/${intentId}#pipeline-runs`, details: { phase: 'released', ...d } });
    case 'wait_opened':
    case 'wait_answered':
    case 'wait_timed_out':
    case 'wait_resumed': {
      // A bridge's wait for an answer from outside (lib/pipeline/waits.ts), told as a step of the pipeline.
      const name = `“${str(d.name) ?? '?'}”`;
      const summary = {
        wait_opened: `Waits for ${name} until ${moment(d.deadline)} (then ${str(d.onTimeout) ?? '?'})`,
        wait_answered: `Answer to ${name}: ${(str(d.outcome) ?? '?').replace(/_/g, ' ')}`,
        wait_timed_out: `Wait for ${name} missed its deadline`,
        wait_resumed: `Run resumed after ${name} (${(str(d.state) ?? '?').replace(/_/g, ' ')})`,
      }[r.action];
      return sourced(r, { kind: 'pipeline_step', summary, actor: r.actor, link: `/intents/${intentId}#pipeline-runs`, details: { ...d } });
    }
    default:
      if (r.action.startsWith('bridge_')) {
        const status = r.action.slice('bridge_'.length);
        return sourced(r, { kind: 'pipeline_step', summary: `Step ${str(d.bridge) ?? '?'} ${status}${str(d.error) ? `: ${str(d.error)}` : ''}`, actor: r.actor, link: `/intents/${intentId}#pipeline-runs`, details: { status, ...d } });
      }
      if (UNBLOCK_ACTIONS.includes(r.action) || REFUSED_UNBLOCK_ACTIONS.includes(r.action)) return unblockEntry(r, intentId, 'holder');
      return sourced(r, { kind: 'other', summary: auditActionLabel(r.action), actor: r.actor, link, details: { action: r.action, ...versions, ...d } });
  }
}

const auditSource: TimelineSource = {
  name: 'audit',
  kinds: ['created', 'status_change', 'pipeline_run', 'pipeline_step', 'unblock', 'other'],
  async load({ intentId, after: key, limit, tx }) {
    // Corrections come from their own table (with the diff); their audit rows would say the same thing twice.
    const rows = await tx.$queryRaw<AuditRow[]>`
      SELECT ${AUDIT_COLUMNS} FROM audit_events
      WHERE intent_id = ${intentId}::uuid AND action <> 'correction' ${after(key)}
      ${IN_WRITE_ORDER} LIMIT ${limit}`;
    return rows.map((r) => auditEntry(r, intentId));
  },
};

/** Unblocks of another intent's backend that this intent was waiting behind (the guard names the waiters' intents). */
const unblockedWaiterSource: TimelineSource = {
  name: 'unblocked',
  kinds: ['unblock'],
  async load({ intentId, after: key, limit, tx }) {
    const rows = await tx.$queryRaw<AuditRow[]>`
      SELECT ${AUDIT_COLUMNS} FROM audit_events
      WHERE action = ANY(${UNBLOCK_ACTIONS}::text[]) AND details -> 'waiterIntents' ? ${intentId}
        AND intent_id IS DISTINCT FROM ${intentId}::uuid ${after(key)}
      ${IN_WRITE_ORDER} LIMIT ${limit}`;
    return rows.map((r) => unblockEntry(r, intentId, 'waiter'));
  },
};

/** Writes accepted under a lease's fencing token: the audit row of the write records the token it was accepted with. */
const fencedWriteSource: TimelineSource = {
  name: 'fenced',
  kinds: ['fenced_write'],
  async load({ intentId, after: key, limit, tx }) {
    const rows = await tx.$queryRaw<AuditRow[]>`
      SELECT ${AUDIT_COLUMNS} FROM audit_events
      WHERE intent_id = ${intentId}::uuid AND details ? 'fencing' ${after(key)}
      ${IN_WRITE_ORDER} LIMIT ${limit}`;
    return rows.map((r) => {
      const f = obj(obj(r.details).fencing);
      return sourced(
        r,
        {
          kind: 'fenced_write',
          summary: `Fenced ${r.action === 'correction' ? 'correction' : 'status change'} accepted with token ${String(f.token ?? '?')} of ${str(f.resource) ?? '?'}`,
          actor: r.actor,
          link: auditHref({ intent: intentId, action: r.action }),
          details: { accepted: true, resource: f.resource ?? null, token: f.token ?? null, action: r.action },
        },
        0,
      );
    });
  },
};

// ── corrections, conflict_events ────────────────────────────────────────────────────────────────────────────────

const correctionSource: TimelineSource = {
  name: 'corrections',
  kinds: ['correction'],
  async load({ intentId, after: key, limit, tx }) {
    const rows = await tx.$queryRaw<(Base & { correctionId: string; diff: unknown; source: string; reason: string; actor: string; versionBefore: number; versionAfter: number; statusBefore: string; statusAfter: string })[]>`
      SELECT id::text AS id, correction_id AS "correctionId", diff, source, reason, actor, version_before AS "versionBefore", version_after AS "versionAfter",
             status_before::text AS "statusBefore", status_after::text AS "statusAfter", created_at AS at, write_seq::text AS seq
      FROM corrections WHERE intent_id = ${intentId}::uuid ${after(key)}
      ${IN_WRITE_ORDER} LIMIT ${limit}`;
    return rows.map((r) =>
      sourced(r, {
        kind: 'correction',
        summary: `Corrected: “${r.reason}”${r.statusBefore !== r.statusAfter ? ` (${r.statusBefore} → ${r.statusAfter})` : ''}`,
        actor: r.actor,
        link: `/intents/${intentId}#correction-${r.correctionId}`,
        details: { correctionId: r.correctionId, reason: r.reason, source: r.source, diff: r.diff, statusBefore: r.statusBefore, statusAfter: r.statusAfter, versionBefore: r.versionBefore, versionAfter: r.versionAfter },
      }),
    );
  },
};

const conflictSource: TimelineSource = {
  name: 'conflicts',
  kinds: ['conflict'],
  async load({ intentId, after: key, limit, tx }) {
    const rows = await tx.$queryRaw<(Base & { operation: string; expectedVersion: number; currentVersion: number; reason: string; actor: string })[]>`
      SELECT id::text AS id, operation, expected_version AS "expectedVersion", current_version AS "currentVersion", reason, actor, at, write_seq::text AS seq
      FROM conflict_events WHERE intent_id = ${intentId}::uuid ${after(key)}
      ${IN_WRITE_ORDER} LIMIT ${limit}`;
    return rows.map((r) =>
      sourced(r, {
        kind: 'conflict',
        summary: `${operationLabel(r.operation)} refused: expected version ${r.expectedVersion}, the intent was at ${r.currentVersion}`,
        actor: r.actor,
        link: `/intents/${intentId}#conflicts`,
        details: { operation: r.operation, expectedVersion: r.expectedVersion, currentVersion: r.currentVersion, reason: r.reason },
      }),
    );
  },
};

/** "backend 3826 (psql, idle in transaction)": a backend named as the Locks page lists it, with its pid to find it there. */
function backendWords(pid: number, label: string | null, state: string | null): string {
  const about = [label, state === 'idle in transaction' ? state : null].filter(Boolean).join(', ');
  return `backend ${pid}${about ? ` (${about})` : ''}`;
}

// ── intent_engine_events: lock waits and timeouts, idempotent repeats, fenced writes refused ─────────────────────

type EngineRow = Base & { kind: string; operation: string; actor: string | null; waitedMs: number | null; outcome: string | null; holderPid: number | null; details: unknown };

/** What a refused status change asked for, as its entry ends: "; it asked for PROCESSED: “partner is back”". */
function askedWords(asked: Record<string, unknown>): string {
  const to = str(asked.to);
  if (!to) return '';
  const reason = str(asked.reason);
  return `; it asked for ${to}${reason ? `: “${reason}”` : ''}`;
}

function engineEntry(r: EngineRow, intentId: string): SourcedEntry {
  const d = obj(r.details);
  const holder = r.holderPid !== null ? ` by ${backendWords(r.holderPid, str(d.holderApplication), str(d.holderState))}` : ' by another transaction';
  const base = { operation: r.operation, waitedMs: r.waitedMs, outcome: r.outcome, holderPid: r.holderPid };
  switch (r.kind) {
    case 'lock_wait':
      return sourced(r, { kind: 'lock_wait', summary: `${operationLabel(r.operation)} waited ${formatDuration(r.waitedMs ?? 0)} for the row lock`, actor: r.actor, link: '/contention', details: base });
    case 'lock_timeout':
      return sourced(r, {
        kind: 'lock_timeout',
        summary:
          (r.outcome !== 'refused'
            ? `${operationLabel(r.operation)} gave up after waiting ${formatDuration(r.waitedMs ?? 0)} for the lock held${holder}`
            : d.refusedWithoutWaiting === true
              ? `${operationLabel(r.operation)} refused without waiting: the row was held${holder}, and as many commands as may wait for it already did`
              : `${operationLabel(r.operation)} refused at once (NOWAIT): the row was held${holder}`) + askedWords(obj(d.asked)),
        actor: r.actor,
        link: '/locks',
        details: { ...base, ...d },
      });
    case 'idempotent_repeat':
      return sourced(r, { kind: 'idempotent_repeat', summary: `A repeat of a ${operationLabel(r.operation).toLowerCase()} was answered from its idempotency key (${str(d.outcome) ?? '?'}); nothing was done again`, actor: r.actor, link: '/contention', details: { operation: r.operation, ...d } });
    case 'fence_refused':
      return sourced(r, {
        kind: 'fenced_write',
        summary: `A fenced ${operationLabel(r.operation).toLowerCase()} was refused: token ${String(d.token ?? '?')} of ${str(d.resource) ?? '?'} is older than one already granted`,
        actor: r.actor,
        link: '/locks#leases-title',
        details: { accepted: false, operation: r.operation, resource: d.resource ?? null, token: d.token ?? null },
      });
    default:
      return sourced(r, { kind: 'other', summary: `${r.kind} (${r.operation})`, actor: r.actor, link: `/intents/${intentId}`, details: { ...base, ...d } });
  }
}

const engineSource: TimelineSource = {
  name: 'engine',
  kinds: ['lock_wait', 'lock_timeout', 'idempotent_repeat', 'fenced_write'],
  async load({ intentId, after: key, limit, tx }) {
    const rows = await tx.$queryRaw<EngineRow[]>`
      SELECT id::text AS id, kind, operation, actor, waited_ms AS "waitedMs", outcome, holder_pid AS "holderPid", details, at, write_seq::text AS seq
      FROM intent_engine_events WHERE intent_id = ${intentId}::uuid ${after(key)}
      ${IN_WRITE_ORDER} LIMIT ${limit}`;
    return rows.map((r) => engineEntry(r, intentId));
  },
};

// ── lease_events of the intent's own resources ─────────────────────────────────────────────────────────────────

/** The lease resources that are about one intent: a reviewer's edit lease and a worker's claim fence. */
export function intentLeaseResources(intentId: string): string[] {
  return [editLeaseResource(intentId), `${CLAIM_FENCE_PREFIX}${intentId.toLowerCase()}`];
}

const LEASE_VERBS: Record<string, string> = { acquired: 'granted', denied: 'denied', released: 'released', expired: 'expired' };

/**
 * A lease event in the words of what the lease is for: the reviewer's edit lease, or the fence of a worker's claim,
 * rather than its resource's name (the details keep it). A denial names who held it, not a token it was not given.
 */
function leaseSummary(r: { resource: string; event: string; holder: string | null; token: string | null }): string {
  const what = r.resource.startsWith(CLAIM_FENCE_PREFIX) ? 'Worker claim’s fence' : isEditLeaseResource(r.resource) ? 'Edit lease' : `Lease on ${r.resource}`;
  const verb = LEASE_VERBS[r.event] ?? r.event;
  if (r.event === 'denied') return `${what} ${verb}${r.holder ? `: held by ${r.holder}` : ''}`;
  return `${what} ${verb}${r.token !== null ? ` (token ${r.token})` : ''}`;
}

const leaseSource: TimelineSource = {
  name: 'leases',
  kinds: ['lease'],
  async load({ intentId, after: key, limit, tx }) {
    // Refreshes are left out: a held lease refreshes every few seconds and would bury everything else.
    const rows = await tx.$queryRaw<(Base & { resource: string; backend: string; event: string; owner: string | null; holder: string | null; token: string | null; expiresAt: Date | null })[]>`
      SELECT id::text AS id, resource, backend, event, owner, holder, token::text AS token, expires_at AS "expiresAt", at, write_seq::text AS seq
      FROM lease_events WHERE resource = ANY(${intentLeaseResources(intentId)}::text[]) AND event <> 'refreshed' ${after(key)}
      ${IN_WRITE_ORDER} LIMIT ${limit}`;
    return rows.map((r) =>
      sourced(r, {
        kind: 'lease',
        summary: leaseSummary(r),
        actor: r.owner,
        link: '/locks#leases-title',
        details: { resource: r.resource, event: r.event, backend: r.backend, owner: r.owner, holder: r.holder, token: r.token === null ? null : Number(r.token), expiresAt: r.expiresAt?.toISOString() ?? null },
      }),
    );
  },
};

// ── outbox_events: events sent out ─────────────────────────────────────────────────────────────────────────────

const eventOutSource: TimelineSource = {
  name: 'events',
  kinds: ['event_out'],
  async load({ intentId, after: key, limit, tx }) {
    const rows = await tx.$queryRaw<(Base & { subject: string; publishedAt: Date | null; streamSeq: string | null; actor: string | null })[]>`
      SELECT id::text AS id, subject, published_at AS "publishedAt", stream_seq::text AS "streamSeq", payload ->> 'actor' AS actor,
             created_at AS at, write_seq::text AS seq
      FROM outbox_events WHERE ordering_key = ${intentId.toLowerCase()} ${after(key)}
      ${IN_WRITE_ORDER} LIMIT ${limit}`;
    return rows.map((r) =>
      sourced(r, {
        kind: 'event_out',
        summary: `${r.subject} ${r.publishedAt ? `published${r.streamSeq !== null ? ` (stream sequence ${r.streamSeq})` : ''}` : 'waiting in the outbox'}`,
        actor: r.actor,
        link: '/events',
        details: { eventId: r.id, subject: r.subject, publishedAt: r.publishedAt?.toISOString() ?? null, streamSeq: r.streamSeq === null ? null : Number(r.streamSeq) },
      }),
    );
  },
};

// ── lock_episodes: blockings the lock history sampled with this intent in them ───────────────────────────────────

/**
 * A blocking in words an on-call engineer reads at a glance: who held the row (the console's actor and operation, or
 * the application, with its pid to find it on the Locks page), how long others were kept waiting, since when the
 * holder's transaction was open, and who waited behind it. The episode's length is how long someone waited, not how
 * long the row was held: a transaction may hold it long before anyone asks for it, and one transaction that blocks
 * twice is two episodes.
 */
function episodeSummary(e: IntentEpisode): string {
  const holder = backendWords(e.rootPid, e.rootLabel, e.rootState);
  const length = `${formatDuration(e.durationMs)}${e.endedAt ? '' : ' so far, still going on'}`;
  const waiting = `${e.peakWaiters} waiting at the peak`;
  const since = e.rootXactStart ? `, in a transaction open since ${formatUtc(e.rootXactStart)}` : '';
  if (e.role === 'waiter') return `A session working on it waited ${length} behind ${holder}${since}; ${waiting}`;
  const shown = e.waitedBy.slice(0, 3).join(', ');
  const more = e.waitedBy.length > 3 ? ` and ${e.waitedBy.length - 3} more` : '';
  return `Others waited ${length} for its row, held by ${holder}${since}; ${waiting}${shown ? `: ${shown}${more}` : ''}`;
}

/**
 * The sampler draws an episode's write position when it first records it, while its waiters still wait: so a
 * blocking comes after what was written before it began and before the changes it delayed.
 */
const lockEpisodeSource: TimelineSource = {
  name: 'lock-episodes',
  kinds: ['lock_episode'],
  async load({ intentId, after: key, limit, tx }) {
    const episodes = await episodesForIntent(intentId, tx, { after: cursorKey(key) ?? undefined, limit });
    return episodes.map((e) =>
      sourced(
        { id: e.id, at: new Date(e.startedAt), seq: e.writeSeq },
        {
          kind: 'lock_episode',
          summary: episodeSummary(e),
          actor: null,
          link: `/locks?episode=${e.id}`,
          details: {
            episodeId: e.id,
            role: e.role,
            rootPid: e.rootPid,
            rootLabel: e.rootLabel,
            rootState: e.rootState,
            rootXactStart: e.rootXactStart,
            waitedBy: e.waitedBy,
            durationMs: e.durationMs,
            peakWaiters: e.peakWaiters,
            startedAt: e.startedAt,
            endedAt: e.endedAt,
          },
        },
      ),
    );
  },
};

/** Every source of the timeline. */
export const TIMELINE_SOURCES: readonly TimelineSource[] = [
  auditSource,
  correctionSource,
  conflictSource,
  engineSource,
  fencedWriteSource,
  leaseSource,
  eventOutSource,
  unblockedWaiterSource,
  lockEpisodeSource,
];
