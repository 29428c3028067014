import type { IntentStatus } from './intent-states';
import type { JsonObject, JsonValue } from './json';

/** What the API and the console see of an intent. Dates are ISO strings: the same shape over the wire. */
export type Intent = {
  id: string;
  status: IntentStatus;
  payload: JsonObject;
  source: string;
  version: number;
  isReplay: boolean;
  createdAt: string;
  updatedAt: string;
};

export type Correction = {
  id: string;
  intentId: string;
  correctionId: string;
  diff: JsonObject;
  source: string;
  reason: string;
  metadata: JsonObject | null;
  actor: string;
  versionBefore: number;
  versionAfter: number;
  statusBefore: IntentStatus;
  statusAfter: IntentStatus;
  createdAt: string;
};

export type IntentWithCorrections = Intent & { corrections: Correction[] };

export type AuditEvent = {
  id: string;
  intentId: string | null;
  action: string;
  actor: string;
  fromStatus: IntentStatus | null;
  toStatus: IntentStatus | null;
  versionBefore: number | null;
  versionAfter: number | null;
  details: JsonValue | null;
  at: string;
};

export type ConflictEvent = {
  id: string;
  intentId: string;
  operation: string;
  expectedVersion: number;
  currentVersion: number;
  reason: string;
  actor: string;
  at: string;
};

export type UpdateStatusResult = { intent: Intent; alreadyApplied: boolean };
export type BulkStatusResult = { intents: Intent[]; alreadyApplied: string[] };
export type ReevaluateResult = {
  intentId: string;
  status: IntentStatus;
  version: number;
  correctionId: string;
  correctionCount: number;
  alreadyApplied: boolean;
  retries: number;
};

/** Who is acting: the signed-in user or an API token's owner, resolved by the door, never taken from a body. */
export type Actor = { name: string };
