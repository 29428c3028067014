import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiOverrideContext, type ZodOpenApiPathsObject, type ZodOpenApiResponseObject } from 'zod-openapi';
import { EVENT_SCHEMAS } from '@/lib/events/payloads';
import { configuredEventStream } from '@/lib/events/stream';
import { natsSubject, SUBJECTS } from '@/lib/events/subjects';
import { REPLAYED_HEADERS } from '@/lib/intents/errors';
import { errorSchema, lockTimeoutDetailsSchema } from './responses';
import { OPERATIONS, operationErrors, type ApiOperation } from './operations';

/**
 * The OpenAPI 3.1 document of the JSON API, generated from the operations table (./operations.ts) and so from the
 * Zod schemas the routes validate with: there is no second description of the API to keep in step.
 * Served at GET /api/openapi.json and rendered at /api-docs.
 */
const REPLAYED_HEADER = Object.keys(REPLAYED_HEADERS)[0];
const replayedHeader = z
  .literal('true')
  .meta({ description: 'Present when this answer is the stored first answer to an earlier request with the same `idempotencyKey` and body (refusals included).' });

const idempotencyKeyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({ description: 'The idempotency key, as an alternative to the body’s `idempotencyKey` (the same key either way; both given and different is a 400).', example: 'order-42-create' }),
});

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad input: `details.fields` names each refused field; nothing changed.',
  401: 'No valid credentials (`WWW-Authenticate: Bearer`).',
  403: 'The caller’s roles do not allow this (`details.requiredRoles` names the roles that would).',
  404: 'Not found.',
  409: 'Refused: the change conflicts with the intent’s state or version; nothing was applied.',
  413: 'The body is larger than the limit.',
  429: 'Too many at once: wait `Retry-After` seconds.',
  422: 'The idempotency key was used before with a different body.',
  423: 'The row lock was not obtained in time (or at once, with `nowait`); `details.holders` names who held it and `details.locksPage` links to the console’s Locks page with that holder selected.',
  503: 'The operation did not get through (retries exhausted, deadlock, cancelled, or the database under pressure); nothing was applied. Try again.',
};

function responsesFor(op: ApiOperation): Record<string, ZodOpenApiResponseObject> {
  const replayed = Boolean(op.idempotent);
  const responses: Record<string, ZodOpenApiResponseObject> = {
    [op.success.status]: {
      description: op.success.description,
      headers: op.success.headers || replayed ? z.object({ ...op.success.headers, ...(replayed ? { [REPLAYED_HEADER]: replayedHeader.optional() } : {}) }) : undefined,
      content: { [op.success.contentType ?? 'application/json']: { schema: op.success.schema ?? z.unknown() } },
    },
  };
  for (const [status, codes] of Object.entries(operationErrors(op))) {
    const code = Number(status);
    // Refusals of the engine are stored with the key and replayed like successes; bad input and auth never are.
    const replayable = replayed && code >= 404 && code !== 413;
    responses[status] = {
      description: `${STATUS_TEXT[code] ?? 'Refused.'}${code === 400 && op.dataDependent400 ? ` ${op.dataDependent400}` : ''} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
      headers: z.object({
        ...(code === 401 ? { 'WWW-Authenticate': z.string().meta({ description: 'The scheme accepted: `Bearer realm="bridge-console"`.' }) } : {}),
        ...(code === 503 || code === 429 ? { 'Retry-After': z.string().meta({ description: 'Seconds to wait.' }) } : {}),
        ...(replayable ? { [REPLAYED_HEADER]: replayedHeader.optional() } : {}),
      }),
      // A 423 is always a lock_timeout, whose details have one shape: said, so clients can rely on the holder and its link.
      content: { 'application/json': { schema: errorSchema(codes, code === 423 ? lockTimeoutDetailsSchema : undefined) } },
    };
  }
  for (const [status, other] of Object.entries(op.otherResponses ?? {})) {
    responses[status] = { description: other.description, content: { 'application/json': { schema: other.schema } } };
  }
  return responses;
}

function operationObject(op: ApiOperation): ZodOpenApiOperationObject {
  return {
    operationId: op.operationId,
    summary: op.summary,
    description: [op.description, op.permission ? `Needs the permission \`${op.permission}\`.` : undefined].filter(Boolean).join('\n\n') || undefined,
    tags: [op.tag],
    security: op.auth === 'bearer' ? [{ bearer: [] }] : op.auth === 'metrics' ? [{}, { bearer: [] }] : [],
    requestParams: {
      ...(op.pathParams ? { path: op.pathParams } : {}),
      ...(op.query ? { query: op.query } : {}),
      ...(op.idempotent ? { header: idempotencyKeyHeader } : {}),
    },
    requestBody: op.body ? { required: true, content: { 'application/json': { schema: op.body } } } : undefined,
    responses: responsesFor(op),
  };
}

/**
 * A JSON body field is validated in two steps: the raw value is checked for what Postgres cannot store, then parsed
 * as an object (`z.unknown().superRefine(…).pipe(z.record(…))`). The input side of such a pipe says nothing, so the
 * document describes it by what it must parse to.
 */
function describePipesByTheirOutput({ jsonSchema, zodSchema }: ZodOpenApiOverrideContext) {
  const def = zodSchema._zod.def as unknown as { type: string; in?: z.ZodType; out?: z.ZodType };
  if (def.type !== 'pipe' || !def.in || !def.out || def.in._zod.def.type !== 'unknown') return;
  const { $schema: _ignored, ...out } = z.toJSONSchema(def.out, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  Object.assign(jsonSchema, out, jsonSchema);
}

const SUBJECT_TEXT: Record<string, string> = {
  [SUBJECTS.intentCreated]: 'An intent was created.',
  [SUBJECTS.statusChanged]: 'An intent moved to another status (one request, a bulk update or a pipeline step).',
  [SUBJECTS.corrected]: 'A correction was applied: `data.diff` was deep-merged into the payload.',
  [SUBJECTS.conflict]: 'A command was refused because its expectedVersion no longer matched; nothing was applied.',
  [SUBJECTS.pipelineFinished]: 'A pipeline run over the intent finished.',
  [SUBJECTS.lockAcquired]: 'A lease lock was granted.',
  [SUBJECTS.lockDenied]: 'A lease lock was refused: someone else holds it.',
  [SUBJECTS.lockReleased]: 'A lease lock was released by its owner.',
  [SUBJECTS.lockExpired]: 'A lease lock ran out of time.',
};

/**
 * The events other services receive, beside the HTTP API (an AsyncAPI-style section): the JetStream stream, each
 * subject and its payload's JSON Schema, generated from the same Zod schemas the relay tests validate messages with.
 * The stream and the subjects' prefix are this deployment's (EVENTS_STREAM, EVENTS_SUBJECT_PREFIX).
 */
function eventsSection() {
  const stream = configuredEventStream();
  return {
    transport: 'NATS JetStream',
    stream: stream.name,
    subjectPrefix: stream.subjectPrefix,
    delivery: `At least once. The message id (\`Nats-Msg-Id\`) is the event's id, a UUID unique across databases and environments, also the payload's \`id\`: deduplicate on it. Events of one intent (of one lock resource) are published in version order. Each event is published on the subject \`${natsSubject(stream, '<type>')}\`, its \`type\` being one of the keys below.`,
    subjects: Object.fromEntries(
      Object.values(SUBJECTS).map((subject) => {
        const { $schema: _ignored, ...payload } = z.toJSONSchema(EVENT_SCHEMAS[subject], { io: 'output' }) as Record<string, unknown>;
        return [subject, { description: SUBJECT_TEXT[subject], payload }];
      }),
    ),
  };
}

let cached: ReturnType<typeof createDocument> | undefined;

export function openApiDocument() {
  if (cached) return cached;
  const paths: ZodOpenApiPathsObject = {};
  for (const op of OPERATIONS) (paths[op.path] ??= {})[op.method] = operationObject(op);
  cached = createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Bridge Console API',
      version: '1.0.0',
      description:
        'Intents, their status changes and corrections, and what the console shows about locks and contention. All bodies are JSON; errors are `{ "error": { "code", "message", "details"? } }`. The events published for other services (NATS JetStream, subjects `evt.intent.*` and `evt.lock.*`) are described in `x-events` and in docs/EVENTS.md.',
    },
    servers: [{ url: '/' }],
    tags: [
      { name: 'intents', description: 'Create, read, move and correct intents.' },
      { name: 'operations', description: 'Locks, metrics, health and the contention replay.' },
      { name: 'console', description: 'What the console pages read; open to tokens with the same permissions.' },
      { name: 'meta', description: 'This document.' },
    ],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'bc_…',
          description: 'An API token made on /account/tokens (it acts with its owner’s roles). The console’s own pages use their session cookie instead.',
        },
      },
    },
    paths,
    'x-events': eventsSection(),
  }, { override: describePipesByTheirOutput });
  return cached;
}
