import { z } from 'zod';
import { INTENT_STATUSES } from '@/lib/shared/intent-states';
import { SUBJECTS, type Subject } from './subjects';

/**
 * The events' JSON, version 1: one envelope for every subject, with `data` per subject. The database builds the
 * envelope (bridge_outbox_payload, migration 20261124120000_outbox); these schemas describe it for other services
 * (they are in the OpenAPI document's `x-events` and docs/EVENTS.md), type the emitters, and the relay tests
 * validate every published message against them.
 *
 * Compatibility: fields are only ever added within a `specVersion`; a change that removes or retypes a field
 * publishes `specVersion: 2`. Consumers should ignore fields they do not know.
 */
const status = z.enum(INTENT_STATUSES);
const jsonObject = z.record(z.string(), z.unknown());

export const eventData = {
  [SUBJECTS.intentCreated]: z.object({ status, source: z.string(), payload: jsonObject }),
  [SUBJECTS.statusChanged]: z.object({
    from: status,
    to: status,
    versionBefore: z.int(),
    action: z.string().meta({ description: 'What moved it: status_change, bulk_status_change, or a pipeline step.' }),
    reason: z.string().nullable().meta({ description: 'The reason given with the change, when one was.' }),
  }),
  [SUBJECTS.corrected]: z.object({
    correctionId: z.string(),
    diff: jsonObject.meta({ description: 'What changed: deep-merged into the payload.' }),
    source: z.string(),
    reason: z.string(),
    metadata: jsonObject.nullable(),
    from: status,
    to: status,
    versionBefore: z.int(),
  }),
  [SUBJECTS.conflict]: z.object({
    operation: z.string(),
    expectedVersion: z.int(),
    currentVersion: z.int(),
    reason: z.string(),
  }),
  [SUBJECTS.pipelineFinished]: z.looseObject({
    outcome: z.string().meta({ description: 'How the run ended: succeeded, failed, finished_with_errors (CONTINUE), interrupted, or waiting (a bridge waits for an answer from outside; a later run resumes it).' }),
    runId: z.string().optional(),
    error: z.string().optional().meta({ description: 'Why the run failed, when it did.' }),
    status: z.string().optional().meta({ description: 'The intent status the run left.' }),
  }),
  [SUBJECTS.lockAcquired]: z.looseObject({
    resourceId: z.string(),
    ownerId: z.string(),
    expiresAt: z.string(),
    fencingToken: z.union([z.string(), z.number()]).optional(),
    backend: z.string().optional().meta({ description: 'Which lease backend granted it: postgres or redis.' }),
  }),
  [SUBJECTS.lockDenied]: z.looseObject({
    resourceId: z.string(),
    requestedBy: z.string(),
    currentOwner: z.string().nullable(),
    reason: z.string(),
    heldUntil: z.string().nullable().optional().meta({ description: 'When the current holder’s lease runs out.' }),
  }),
  [SUBJECTS.lockReleased]: z.looseObject({ resourceId: z.string(), ownerId: z.string(), fencingToken: z.union([z.string(), z.number()]).optional() }),
  [SUBJECTS.lockExpired]: z.looseObject({ resourceId: z.string(), ownerId: z.string().optional(), fencingToken: z.union([z.string(), z.number()]).optional() }),
} satisfies Record<Subject, z.ZodType>;

export type EventData<S extends Subject> = z.infer<(typeof eventData)[S]>;

/** The envelope of every event: the same fields whatever the subject. */
export function eventSchema<S extends Subject>(subject: S) {
  return z.object({
    specVersion: z.literal(1),
    id: z.uuid().meta({ description: 'The event’s id, unique across databases and environments: also the message id (`Nats-Msg-Id`); deduplicate on it.' }),
    type: z.literal(subject),
    occurredAt: z.iso.datetime().meta({ description: 'When the change committed its row (UTC).' }),
    intentId: z.uuid().nullable().meta({ description: 'The intent, for evt.intent.*; null for lock events.' }),
    version: z.int().nullable().meta({ description: 'The intent version after the change (conflicts: the version the intent was at); lock events: the fencing token when there is one.' }),
    actor: z.string().meta({ description: 'Who did it: the user or API token owner, or a service.' }),
    data: eventData[subject],
  });
}

export const EVENT_SCHEMAS = Object.fromEntries(Object.values(SUBJECTS).map((s) => [s, eventSchema(s)])) as { [S in Subject]: ReturnType<typeof eventSchema<S>> };
