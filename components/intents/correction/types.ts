import type { ActionError } from '@/lib/console/action-result';
import type { JsonRecord, RecordedBefore } from '@/lib/console/json-diff';
import type { ChangesSince } from '@/lib/intents/changes-since';
import type { ReevaluateResult } from '@/lib/shared/intent-types';

/** What one click on "Apply" sends: the edit, why and from where, and the version it was made on. */
export type Submission = { diff: JsonRecord; reason: string; source: string; expectedVersion: number; idempotencyKey: string; metadata: { console: { before: RecordedBefore } } };

/** `reviewText`: the reviewer's edit as they may rework it before re-applying (starts as what they sent). */
export type Conflict = { submission: Submission; base: JsonRecord; changes: ChangesSince; reviewText: string };

export type Outcome = { kind: 'ok'; result: ReevaluateResult } | { kind: 'error'; error: ActionError } | null;

/** The form as the reviewer left it: kept across reloads (lib/console/correction-draft.ts). */
export type Draft = { text: string; reason: string; source: string; key: string; opened: { version: number; payload: JsonRecord }; conflict: Conflict | null };

export const EMPTY_DIFF = '{\n  \n}';
