import { useState } from 'react';
import type { ActionError } from './action-result';

/**
 * A banner about an action the person took on an intent ("Moved to RECEIVED (version 3)", a refusal) speaks of the
 * intent as the action left it. Once the intent has moved past that version — the live feed or a refetch brought a
 * newer one — the banner describes the past, so it is no longer shown.
 */
export function noticeStillCurrent(atVersion: number, currentVersion: number | undefined): boolean {
  return currentVersion === undefined || currentVersion <= atVersion;
}

/**
 * The version a refusal speaks of: the one the page showed when it was refused, or, when the refusal names a newer
 * one (a version conflict: "it is now at version 7"), that one, so the refetch that brings version 7 keeps it shown.
 */
export function refusalVersion(error: ActionError, shownVersion: number): number {
  const current = (error.details as { currentVersion?: unknown } | undefined)?.currentVersion;
  return typeof current === 'number' && Number.isInteger(current) ? Math.max(current, shownVersion) : shownVersion;
}

/** One action banner at a time, shown while the intent is still at the version it was raised at. */
export function useActionNotice<T extends object>(currentVersion: number | undefined) {
  const [notice, setNotice] = useState<{ value: T; atVersion: number } | null>(null);
  return {
    notice: notice && noticeStillCurrent(notice.atVersion, currentVersion) ? notice.value : null,
    show: (value: T, atVersion: number) => setNotice({ value, atVersion }),
    clear: () => setNotice(null),
  };
}
