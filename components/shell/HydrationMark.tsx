'use client';

import { useEffect } from 'react';

/**
 * Marks the document `data-hydrated="true"` once React has hydrated the page. Until then the server's buttons are
 * on screen but their click handlers are not attached, and a click does nothing; the browser tests wait for this
 * mark before they act (e2e/support/test.ts). It is set in an effect, after hydration, so the server's HTML and the
 * client's first render agree and React has no mismatch to report.
 */
export function HydrationMark() {
  useEffect(() => {
    const html = document.documentElement;
    html.dataset.hydrated = 'true';
    // Only a replaced root unmounts this: the page it marked is gone, and a new mark follows the new root.
    return () => {
      delete html.dataset.hydrated;
    };
  }, []);
  return null;
}
