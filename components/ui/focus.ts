'use client';

import { useEffect, type RefObject } from 'react';

/**
 * After an action answers, the control that started it may be gone (a status button the new status no longer
 * offers, a dialog that closed with its opener) and the browser's focus falls back to the page itself: a keyboard or
 * screen-reader user starts again from the top. When that happened, focus goes to the action's outcome (`ref`, with
 * tabIndex -1) instead, once per new outcome (`outcome`). Focus the user put somewhere else is left where it is.
 */
export function useFocusOutcomeWhenLost(ref: RefObject<HTMLElement | null>, outcome: unknown): void {
  useEffect(() => {
    if (!outcome) return;
    // After the frame in which the dialog closes and its own focus return has run.
    const frame = requestAnimationFrame(() => {
      const active = document.activeElement;
      if (!active || active === document.body || !active.isConnected) ref.current?.focus({ preventScroll: false });
    });
    return () => cancelAnimationFrame(frame);
  }, [ref, outcome]);
}
