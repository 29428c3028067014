import { getIntent, getIntentAudit } from './queries';
import type { AuditEvent, Correction, IntentWithCorrections } from '@/lib/shared/intent-types';

/**
 * What happened to an intent after `version`: for a reviewer whose edit was refused with a version conflict, the
 * intent as it is now and the changes that got in first (who, when, what). Read in one snapshot.
 */
export type ChangesSince = { sinceVersion: number; intent: IntentWithCorrections; corrections: Correction[]; events: AuditEvent[] };

export async function getChangesSince(id: string, sinceVersion: number): Promise<ChangesSince> {
  const intent = await getIntent(id);
  const audit = await getIntentAudit(id);
  return {
    sinceVersion,
    intent,
    corrections: intent.corrections.filter((c) => c.versionAfter > sinceVersion && c.versionAfter <= intent.version),
    events: audit.filter((e) => e.versionAfter !== null && e.versionAfter > sinceVersion && e.versionAfter <= intent.version),
  };
}
