import { intentsHref } from '@/lib/console/filters';
import type { SeriesKey } from '@/lib/contention/series';

/**
 * The Intents page on the intents behind a figure: those that met one of the series' outcomes in the span (and the
 * operation, when the figure is one operation's). Absolute instants, so the link shows the same intents when shared.
 */
export function intentsBehind(series: SeriesKey, span: { from: string; to: string }, operation?: string): string {
  return intentsHref({ contention: series, contentionOperation: operation ?? null, contentionFrom: span.from, contentionTo: span.to });
}
