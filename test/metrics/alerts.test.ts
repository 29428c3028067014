import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { updateIntentStatus } from '@/lib/intents/commands';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { makeIntent, resetDatabase, tester } from '../helpers';
import { parseExposition } from './exposition';
import { apiRoute } from '@/lib/http/api-router';

const { GET } = apiRoute('/api/metrics');

/**
 * ops/prometheus/alerts.yml is only worth something if its expressions name metrics we export: a renamed metric
 * would disarm an alert without a sound. Parse the file, and check every metric named in every expression against
 * what GET /api/metrics actually serves.
 */
const rulesFile = z.object({
  groups: z
    .array(
      z.object({
        name: z.string().min(1),
        interval: z.string().regex(/^\d+[smh]$/).optional(),
        rules: z
          .array(
            z.object({
              alert: z.string().regex(/^[A-Za-z][A-Za-z0-9]*$/),
              expr: z.string().min(1),
              for: z.string().regex(/^\d+[smh]$/),
              labels: z.record(z.string(), z.string()).optional(),
              annotations: z.object({ summary: z.string().min(1), description: z.string().min(1) }),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
});

const HISTOGRAM_SERIES = /_(bucket|sum|count)$/;

/** Metric names in a PromQL expression: identifiers followed by a selector, range or space, not functions or labels. */
function metricNames(expr: string): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, '{}');
  return [...new Set([...withoutLabels.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1]).filter((n) => n.startsWith('bridge_')))];
}

describe('Prometheus alert rules', () => {
  const file = rulesFile.parse(parse(readFileSync(join(process.cwd(), 'ops/prometheus/alerts.yml'), 'utf8')));
  const rules = file.groups.flatMap((g) => g.rules);
  let exported: ReturnType<typeof parseExposition>;

  beforeAll(async () => {
    await resetDatabase();
    // Some traffic, so that labelled series (histogram buckets) exist as they would in production.
    const intent = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester);
    await flushOutcomes();
    const res = await GET(new Request('http://console.test/api/metrics'), undefined);
    exported = parseExposition(await res.text());
  });

  it('keeps the four documented alerts with their thresholds', () => {
    const byName = new Map(rules.map((r) => [r.alert, r]));
    expect(byName.get('HighLockContention')?.expr).toMatch(/rate\(bridge_lock_contentions_total\[5m\]\)\)? > 10$/);
    expect(byName.get('FrequentDeadlocks')?.expr).toBe('rate(bridge_deadlock_detections_total[5m]) > 1');
    expect(byName.get('HighVersionConflicts')?.expr).toBe('rate(bridge_version_conflicts_total[5m]) > 20');
    expect(byName.get('SlowLockAcquisition')?.expr).toMatch(/^histogram_quantile\(0\.95, .*bridge_lock_acquisition_duration_seconds_bucket\[5m\].*\) > 0\.5$/);
    expect(byName.get('LongBlocking')?.expr).toBe('max(bridge_lock_blocking_longest_seconds) > 60');
    for (const r of rules) expect(r.for, r.alert).toMatch(/^\d+m$/);
  });

  it('names only metrics that /api/metrics exports', () => {
    const checked: string[] = [];
    for (const rule of rules) {
      const names = metricNames(rule.expr);
      expect(names.length, `${rule.alert} names no bridge_ metric`).toBeGreaterThan(0);
      for (const name of names) {
        const base = name.replace(HISTOGRAM_SERIES, '');
        const ok = exported.types.has(name) || (HISTOGRAM_SERIES.test(name) && exported.types.get(base) === 'histogram');
        expect(ok, `${rule.alert}: ${name} is not exported`).toBe(true);
        if (name !== base) expect([...exported.values.keys()].some((series) => series.startsWith(`${name}{`)), `${name} has no series`).toBe(true);
        checked.push(name);
      }
    }
    expect(checked).toContain('bridge_lock_acquisition_duration_seconds_bucket');
  });

  it('finds metric names the way Prometheus reads them', () => {
    expect(metricNames('histogram_quantile(0.95, sum by (le) (rate(bridge_x_bucket{a="bridge_not_me"}[5m]))) > 0.5')).toEqual(['bridge_x_bucket']);
    expect(metricNames('rate(bridge_a_total[5m]) - rate(bridge_b_total[5m])')).toEqual(['bridge_a_total', 'bridge_b_total']);
  });
});
