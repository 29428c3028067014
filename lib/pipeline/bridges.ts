import { z } from 'zod';
import { env } from '@/lib/env';
import { isPlainObject, type JsonObject, type JsonValue } from '@/lib/shared/json';
import { BridgeError, FinalBridgeError, UnknownBridgeError } from './errors';
import { WAIT_TIMEOUT_RULES, type WaitTimeoutRule } from './waits';
import type { Bridge } from './types';

/**
 * The bridge registry and the four built-in bridges of the BridgeSet (Input → Normalize → Feedback → Output).
 * Each built-in bridge is deterministic: the same intent gives the same engine calls, so a step redone after a
 * crash either finds its work done (the intent's status has moved past what the bridge accepts: skipped) or repeats
 * a correction whose id is derived from its diff (the engine answers "already applied").
 */

/** Strings with their surrounding whitespace removed, at every depth: the canonical payload. */
export function canonicalPayload(value: JsonValue): JsonValue {
  if (typeof value === 'string') return value.trim();
  if (Array.isArray(value)) return value.map(canonicalPayload);
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, canonicalPayload(v)]));
  return value;
}

/**
 * The smallest diff that turns `from` into `to` under the engine's deep merge (objects merge, anything else
 * replaces), for objects with the same keys. Empty when nothing changes.
 */
export function mergeDiff(from: JsonObject, to: JsonObject): JsonObject {
  const diff: JsonObject = {};
  for (const [key, next] of Object.entries(to)) {
    const prev = from[key];
    if (isPlainObject(prev) && isPlainObject(next)) {
      const inner = mergeDiff(prev, next);
      if (Object.keys(inner).length) diff[key] = inner;
    } else if (JSON.stringify(prev) !== JSON.stringify(next)) {
      diff[key] = next;
    }
  }
  return diff;
}

/** Input: RECEIVED → NORMALIZED once the payload is a non-empty object whose keys are not blank. */
export const inputBridge: Bridge = {
  name: 'input',
  description: 'Validates the payload (a non-empty object, no blank keys) and moves RECEIVED to NORMALIZED.',
  accepts: ['RECEIVED'],
  effects: { moves: [['RECEIVED', 'NORMALIZED']], correction: null },
  async run(ctx) {
    const keys = Object.keys(ctx.intent.payload);
    if (keys.length === 0) throw new BridgeError('The payload is empty: there is nothing to process.', { field: 'payload' });
    const blank = keys.filter((k) => k.trim() === '');
    if (blank.length) throw new BridgeError('The payload has a blank key.', { field: 'payload', keys: blank });
    await ctx.moveTo('NORMALIZED');
    return { keys: keys.length };
  },
};

/** Normalize: writes the canonical payload (trimmed strings) as a correction when it differs, then NORMALIZED → PROCESSED. */
export const normalizeBridge: Bridge = {
  name: 'normalize',
  description: 'Writes the canonical payload (strings trimmed) as a correction when it differs, and moves NORMALIZED to PROCESSED.',
  accepts: ['NORMALIZED'],
  effects: { moves: [['NORMALIZED', 'PROCESSED']], correction: 'the canonical payload (strings trimmed), when it differs' },
  async run(ctx) {
    const diff = mergeDiff(ctx.intent.payload, canonicalPayload(ctx.intent.payload) as JsonObject);
    const changed = Object.keys(diff);
    if (changed.length) await ctx.correct(diff, 'pipeline normalize: canonical payload (surrounding whitespace trimmed)');
    await ctx.moveTo('PROCESSED');
    return { changed };
  },
};

/**
 * Feedback: a payload may carry `feedback`, an object of adjustments sent along by an upstream service or a
 * reviewer; it is applied as a correction (PROCESSED → CORRECTED). Without it the intent stays PROCESSED.
 */
export const feedbackBridge: Bridge = {
  name: 'feedback',
  description: 'Applies the payload’s `feedback` object as a correction (PROCESSED → CORRECTED); without one the intent stays PROCESSED.',
  accepts: ['PROCESSED'],
  effects: { moves: [['PROCESSED', 'CORRECTED']], correction: 'the payload’s `feedback` object, when it has one (moving PROCESSED to CORRECTED)' },
  async run(ctx): Promise<JsonObject> {
    const feedback = ctx.intent.payload.feedback;
    if (!isPlainObject(feedback) || Object.keys(feedback).length === 0) return { corrected: false };
    const after = await ctx.correct(feedback, 'pipeline feedback');
    return { corrected: true, status: after.status };
  },
};

/** Output: PROCESSED or CORRECTED → COMPLETED. */
export const outputBridge: Bridge = {
  name: 'output',
  description: 'Moves PROCESSED or CORRECTED to COMPLETED.',
  accepts: ['PROCESSED', 'CORRECTED'],
  effects: {
    moves: [
      ['PROCESSED', 'COMPLETED'],
      ['CORRECTED', 'COMPLETED'],
    ],
    correction: null,
  },
  async run(ctx) {
    const done = await ctx.moveTo('COMPLETED');
    return { completedAtVersion: done.version };
  },
};

/** What an approval's answer must look like: anything else is refused (400 naming the field) and changes nothing. */
export const approvalAnswerSchema = z.strictObject({ approved: z.boolean(), note: z.string().max(500).optional() });

/** How long `approval` waits by default: a day. */
export const APPROVAL_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/**
 * Approval: waits for a person's decision (the wait `approval`, answered from the intent page or through
 * `POST /api/intents/:id/pipeline/answers` with `{ name: "approval", body: { approved: true } }`). `approved: true`
 * lets the intent go on; `false` fails it, with the note; any other body is refused before it is recorded. The
 * payload may set `approval.timeoutSeconds` (a day by default) and `approval.onTimeout`: `fail` (the default),
 * `retry` (the attempt fails and the next asks again) or `continue` (approved by default). Registered, not in the
 * default BridgeSet: list it in PIPELINE_BRIDGES (for example `input,normalize,approval,feedback,output`).
 */
export const approvalBridge: Bridge = {
  name: 'approval',
  description: 'Waits for a person to approve the intent (the wait “approval”); a rejection fails it, and a missed deadline does what the payload’s approval.onTimeout says (fail by default).',
  // CORRECTED too: an intent corrected before its run reaches the gate (PROCESSED → CORRECTED) is still to be
  // approved. One corrected while it waits keeps its step whatever it accepts (a waiting bridge owns its step).
  accepts: ['PROCESSED', 'CORRECTED'],
  effects: { moves: [], correction: null },
  async run(ctx) {
    const settings = isPlainObject(ctx.intent.payload.approval) ? ctx.intent.payload.approval : {};
    const seconds = typeof settings.timeoutSeconds === 'number' && settings.timeoutSeconds >= 0 ? settings.timeoutSeconds : APPROVAL_TIMEOUT_MS / 1000;
    const onTimeout: WaitTimeoutRule = WAIT_TIMEOUT_RULES.find((r) => r === settings.onTimeout) ?? 'fail';
    const decision = await ctx.waitFor({
      name: 'approval',
      prompt: 'A person approves or rejects this intent: answer { "approved": true } to let it go on, { "approved": false, "note": "…" } to fail it.',
      timeoutMs: Math.round(seconds * 1000),
      onTimeout,
      default: { approved: true, note: 'approved by default: no decision before the deadline' },
      answer: approvalAnswerSchema,
    });
    const answer = isPlainObject(decision.answer) ? decision.answer : {};
    const note = typeof answer.note === 'string' ? answer.note : null;
    if (answer.approved !== true) throw new FinalBridgeError(`Rejected${decision.answeredBy ? ` by ${decision.answeredBy}` : ''}${note ? `: ${note}` : '.'}`, { wait: 'approval' });
    return { approved: true, by: decision.answeredBy, outcome: decision.outcome, ...(note ? { note } : {}) };
  },
};

const registry = globalThis as unknown as { bridgeRegistry?: Map<string, Bridge> };

function bridges(): Map<string, Bridge> {
  if (!registry.bridgeRegistry) {
    registry.bridgeRegistry = new Map();
    // `approval` is registered but not in the default BridgeSet: a deployment opts into waiting for people.
    for (const b of [inputBridge, normalizeBridge, feedbackBridge, outputBridge, approvalBridge]) registry.bridgeRegistry.set(b.name, b);
  }
  return registry.bridgeRegistry;
}

const BRIDGE_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/** Adds a bridge (a deployment's own, or a test's). A name in use is refused unless `replace` says so. */
export function registerBridge(bridge: Bridge, options: { replace?: boolean } = {}): void {
  if (!BRIDGE_NAME.test(bridge.name)) throw new Error(`Bridge name "${bridge.name}" must be lower-case letters, digits, - or _ (up to 64).`);
  if (bridges().has(bridge.name) && !options.replace) throw new Error(`A bridge named "${bridge.name}" is already registered.`);
  bridges().set(bridge.name, bridge);
}

export function unregisterBridge(name: string): void {
  bridges().delete(name);
}

export function registeredBridges(): Bridge[] {
  return [...bridges().values()];
}

/** The BridgeSet to run: the names given, or PIPELINE_BRIDGES; an unknown name is refused before anything runs. */
export function resolveBridgeSet(names: readonly string[] = env().PIPELINE_BRIDGES): Bridge[] {
  const unknown = names.filter((n) => !bridges().has(n));
  if (unknown.length) {
    throw new UnknownBridgeError(`No bridge is registered as ${unknown.map((n) => `"${n}"`).join(', ')}; registered: ${[...bridges().keys()].join(', ')}.`, { unknown });
  }
  if (new Set(names).size !== names.length) throw new UnknownBridgeError('A bridge appears twice in the BridgeSet.', { bridges: names });
  return names.map((n) => bridges().get(n)!);
}
