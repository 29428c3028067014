import type { ActionError } from '@/lib/console/action-result';
import type { FieldEdit } from '@/lib/console/field-edits';
import type { JsonRecord, RecordedBefore } from '@/lib/console/json-diff';
import type { ChangesSince } from '@/lib/intents/changes-since';
import type { ReevaluateResult } from '@/lib/shared/intent-types';

/** What one click on "Apply" sends: the edit, why and from where, and the version it was made on. */
export type Submission = { diff: JsonRecord; reason: string; source: string; expectedVersion: number; idempotencyKey: string; metadata: { console: { before: RecordedBefore } } };

/** `reviewText`: the reviewer's edit as they may rework it before re-applying (starts as what they sent). */
export type Conflict = { submission: Submission; base: JsonRecord; changes: ChangesSince; reviewText: string };

export type Outcome = { kind: 'ok'; result: ReevaluateResult } | { kind: 'error'; error: ActionError } | null;

/** Which editor the reviewer uses: field by field, or the diff as JSON. Both edit the same correction. */
export type EditMode = 'fields' | 'json';

/**
 * The form as the reviewer left it: kept across reloads (lib/console/correction-draft.ts). In `fields` mode the
 * correction is `edits` (the JSON `text` is written from them when the reviewer switches); in `json` mode it is `text`.
 */
export type Draft = { mode: EditMode; edits: FieldEdit[]; text: string; reason: string; source: string; key: string; opened: { version: number; payload: JsonRecord }; conflict: Conflict | null };

export const EMPTY_DIFF = '{\n  \n}';
