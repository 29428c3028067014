import AxeBuilder from '@axe-core/playwright';
import { expect, request as newRequest, test, type Page } from './support/test';
import pg from 'pg';
import { ROLES } from '../lib/auth/permissions';
import { THEME_COOKIE } from '../lib/console/theme';
import { runPipeline } from '../lib/pipeline/run';
import { startReplay } from '../lib/replay/runner';
import { finishRun } from '../lib/replay/runs';
import type { ScenarioResult } from '../lib/replay/types';
import { checksFor, verdictOf } from '../lib/replay/verdict';
import { apiTokenFor, useSessionOf } from './auth';
import { rowOf, screenshot, seedIntent, uniqueMarker } from './intents-fixtures';

/**
 * Every page of the console through axe-core, in the light and the dark theme, with data on it (a corrected intent
 * with its conflicts, a pipeline run, a lock held with a waiter and a past blocking, a replay run, audit rows), so
 * tables, charts and badges are checked, not empty states. A page passes with no serious or critical violation of
 * WCAG 2.x A/AA or axe's best practices, and with all its content inside landmarks (the `region` rule: moderate,
 * but a screen-reader user finds their way by landmarks).
 */
const THEMES = ['light', 'dark'] as const;
type ThemeName = (typeof THEMES)[number];

type Seeded = { corrected: string; piped: string; toConflict: string; authorization: string; holderPid: number; episodeId: string; runId: string };
let seeded: Seeded;
let release: () => Promise<void> = async () => undefined;

async function connect(applicationName: string) {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: applicationName });
  client.on('error', () => undefined);
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return Object.assign(client, { pid: rows[0].pid });
}

/** A lock held on `intentId` by one session with another queued behind it; resolves once the server recorded it. */
async function blockOn(admin: pg.Client, intentId: string, label: string) {
  const holder = await connect(`e2e a11y holder ${label}`);
  const waiter = await connect(`e2e a11y waiter ${label}`);
  await holder.query('BEGIN');
  await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]);
  const queued = waiter.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]).catch((err: unknown) => err);
  const episode = async () =>
    (await admin.query<{ id: string; waiters: number; ended: boolean }>(
      `SELECT id::text, jsonb_array_length(waiters) AS waiters, ended_at IS NOT NULL AS ended FROM lock_episodes WHERE root_pid = $1 ORDER BY id DESC LIMIT 1`,
      [holder.pid],
    )).rows[0];
  // The server's lock sampler has seen the blocking: it is an episode, and the live tree shows it.
  await expect.poll(async () => (await episode())?.waiters ?? 0, { timeout: 20_000 }).toBe(1);
  const end = async () => {
    await holder.query('COMMIT');
    await queued;
    await expect.poll(async () => (await episode())?.ended ?? false, { timeout: 20_000 }).toBe(true);
    await Promise.all([holder.end(), waiter.end()]);
  };
  return { holderPid: holder.pid, episode, end };
}

function replayResult(name: 'corrections-50' | 'throughput', measures: Record<string, number>): ScenarioResult {
  const targets = { throughputMinPerSec: 2000, baselineMinRatio: 0.6, lockAcquisitionP95MaxMs: 5, corrections50P95MaxMs: 150, deadlockRecoveryMeanMaxMs: 300, nowaitFailFastMaxMs: 100, regressionTolerance: 0.2 };
  const checks = checksFor(name, measures, targets);
  return {
    name, title: name, source: 'e2e', startedAt: new Date().toISOString(), durationMs: 1000, latency: null,
    outcomes: { calls: 0, succeeded: 0, alreadyApplied: 0, conflicts: 0, retries: 0, lockTimeouts: 0, deadlocks: 0, failed: {}, failedExamples: {}, engine: {} },
    measures, checks, verdict: verdictOf(checks), notes: [],
  };
}

test.beforeAll(async () => {
  const baseURL = process.env.E2E_BASE_URL!;
  const marker = uniqueMarker('a11y');
  for (const status of ['RECEIVED', 'PROCESSED', 'COMPLETED', 'FAILED'] as const) await seedIntent(status, { order: `${marker}-${status}`, amount: 3 });

  // A correction that won and seven that conflicted with it, through the API (the server counts the conflicts).
  const target = await seedIntent('PROCESSED', { order: `${marker}-corrected`, amount: 1 });
  const { authorization } = await apiTokenFor(['reviewer']);
  const api = await newRequest.newContext({ baseURL });
  const burst = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      api.post(`/api/intents/${target.id}/reeval`, { headers: { authorization }, data: { diff: { amount: 10 + i }, source: 'e2e', reason: `a11y ${i}`, expectedVersion: target.version } }),
    ),
  );
  expect(burst.filter((r) => r.status() === 200)).toHaveLength(1);
  await api.dispose();

  const toConflict = await seedIntent('PROCESSED', { order: `${marker}-conflict`, amount: 5 });
  const piped = await seedIntent('RECEIVED', { order: `${marker}-piped`, amount: 2 });
  await runPipeline({ id: piped.id }, { name: 'e2e-a11y' });

  const engineer = { name: 'e2e-a11y' };
  // One replay run at a time: another worker's seeding (or the Replay suite's run) may hold the turn for a moment.
  let run!: Awaited<ReturnType<typeof startReplay>>;
  await expect(async () => {
    run = await startReplay({ scenarios: ['corrections-50', 'throughput'], size: 'full' }, 'cli', engineer, { environment: 'development' });
  }).toPass({ timeout: 120_000 });
  const results = [
    replayResult('corrections-50', { calls: 50, succeeded: 50, versionIncrement: 50, historyCount: 50, auditCount: 50, p95Ms: 210 }),
    replayResult('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 2600, baselinePerSec: 4200, baselineRatio: 0.62 }),
  ];
  await finishRun(run.id, { status: 'finished', verdict: verdictOf(results.flatMap((r) => r.checks)), progress: { ...run.progress, done: 2 }, results, error: null });

  // A past blocking for the history, and one held for the whole file for the live tree.
  const admin = await connect('e2e a11y admin');
  const past = await blockOn(admin, piped.id, 'past');
  const episodeId = (await past.episode())!.id;
  await past.end();
  const live = await blockOn(admin, target.id, 'live');
  release = async () => {
    await live.end();
    await admin.end();
  };
  seeded = { corrected: target.id, piped: piped.id, toConflict: toConflict.id, authorization, holderPid: live.holderPid, episodeId, runId: run.id };
});

test.afterAll(async () => {
  await release();
});

type PageCase = {
  name: string;
  path: () => string;
  /** Waits for what shows the page has its data, and opens what is to be checked (axe checks what is on the screen). */
  ready: (page: Page) => Promise<void>;
  signedOut?: boolean;
  /** Further states of the same page, each opened after the one before was checked (a dialog over it, say). */
  then?: { name: string; open: (page: Page) => Promise<void> }[];
};

const h1 = (page: Page, name: string | RegExp) => expect(page.getByRole('heading', { level: 1, name })).toBeVisible();

const PAGES: PageCase[] = [
  { name: 'sign-in', path: () => '/sign-in', signedOut: true, ready: (p) => expect(p.getByRole('button', { name: 'Sign in' })).toBeVisible() },
  { name: 'intents', path: () => '/intents', ready: (p) => expect(rowOf(p, seeded.corrected)).toBeVisible() },
  {
    name: 'intent-corrected',
    path: () => `/intents/${seeded.corrected}`,
    ready: async (p) => {
      await expect(p.getByRole('region', { name: 'Pipeline runs' })).toBeVisible();
      await expect(p.getByText('a11y 0').or(p.getByText(/a11y \d/)).first()).toBeVisible();
    },
  },
  {
    // The three-way view a reviewer gets when someone else corrected the intent while they were editing it.
    name: 'intent-conflict',
    path: () => `/intents/${seeded.toConflict}`,
    ready: async (p) => {
      const form = p.getByRole('form', { name: 'Correction' });
      const json = form.getByRole('button', { name: 'JSON' });
      await expect(async () => {
        if ((await json.getAttribute('aria-pressed')) !== 'true') await json.click();
        await expect(json).toHaveAttribute('aria-pressed', 'true', { timeout: 1_000 });
      }).toPass();
      await form.getByLabel(/^Diff \(JSON\)/).fill('{ "amount": 999 }');
      await form.getByLabel('Reason').fill('a11y: mine');
      const headers = { authorization: seeded.authorization };
      const current = await (await p.request.get(`/api/intents/${seeded.toConflict}`, { headers })).json();
      const theirs = await p.request.post(`/api/intents/${seeded.toConflict}/reeval`, {
        headers,
        data: { diff: { amount: Number(current.payload.amount) + 1 }, source: 'e2e', reason: 'a11y: theirs', expectedVersion: current.version },
      });
      expect(theirs.status()).toBe(200);
      await form.getByRole('button', { name: 'Apply correction' }).click();
      await expect(p.getByTestId('conflict')).toContainText('Both changes touch: amount');
    },
  },
  { name: 'intent-piped', path: () => `/intents/${seeded.piped}`, ready: (p) => expect(p.getByRole('region', { name: 'Pipeline runs' }).getByRole('cell', { name: 'normalize', exact: true })).toBeVisible() },
  { name: 'intent-missing', path: () => '/intents/00000000-0000-4000-8000-000000000000', ready: (p) => expect(p.locator('main')).toContainText(/not found|could not be found/i) },
  { name: 'locks-live', path: () => '/locks', ready: (p) => expect(p.getByTestId(`tree-node-${seeded.holderPid}`)).toBeVisible() },
  { name: 'locks-episode', path: () => `/locks?episode=${seeded.episodeId}`, ready: (p) => expect(p.getByTestId('episode-detail')).toBeVisible() },
  { name: 'contention', path: () => '/contention?window=15m', ready: (p) => expect(p.getByTestId('total-conflicts')).toContainText('Version conflicts') },
  { name: 'replay', path: () => '/replay', ready: (p) => expect(p.getByTestId('replay-runs')).toBeVisible() },
  { name: 'replay-run', path: () => `/replay?run=${seeded.runId}`, ready: (p) => expect(p.getByTestId('run-detail')).toHaveAttribute('data-run-id', seeded.runId) },
  { name: 'audit', path: () => '/audit?actor=e2e-a11y', ready: (p) => expect(p.getByRole('row').filter({ hasText: 'e2e-a11y' }).first()).toBeVisible() },
  { name: 'workers', path: () => '/workers', ready: (p) => expect(p.getByRole('heading', { name: 'The BridgeSet' })).toBeVisible() },
  {
    // The recent events with one payload opened.
    name: 'events',
    path: () => `/events?intent=${seeded.corrected}`,
    ready: async (p) => {
      await expect(p.getByRole('heading', { name: 'Relays', level: 2 })).toBeVisible();
      await p.getByTestId('event-row').first().getByRole('button', { name: /^Payload of event/ }).click();
      await expect(p.getByRole('figure', { name: /^Payload of event/ })).toBeVisible();
    },
  },
  { name: 'docs-events', path: () => '/docs/events', ready: (p) => h1(p, 'Events for other services') },
  { name: 'account-tokens', path: () => '/account/tokens', ready: (p) => h1(p, /token/i) },
  { name: 'account-password', path: () => '/account/password', ready: (p) => h1(p, /password/i) },
  { name: 'admin-users', path: () => '/admin/users', ready: (p) => expect(p.getByRole('row').filter({ hasText: 'e2e-' }).first()).toBeVisible() },
  {
    name: 'api-docs',
    path: () => '/api-docs',
    ready: async (p) => {
      await expect(p.getByTestId('swagger-ui').getByText('/api/intents/{id}/status').first()).toBeVisible({ timeout: 20_000 });
    },
    then: [
      {
        // An operation opened: parameters, body, responses, "Try it out".
        name: 'api-docs-operation',
        open: async (p) => {
          const operation = p.locator('#operations-intents-reevaluateIntent');
          await operation.locator('.opblock-summary-control').click();
          await operation.getByRole('button', { name: 'Try it out' }).click();
          await expect(operation.getByRole('button', { name: 'Execute' })).toBeVisible();
        },
      },
      {
        // The Authorize dialog over the page.
        name: 'api-docs-authorize',
        open: async (p) => {
          await p.getByTestId('swagger-ui').getByRole('button', { name: /Authorize/ }).first().click();
          await expect(p.getByRole('dialog').or(p.locator('.dialog-ux')).first()).toBeVisible();
        },
      },
    ],
  },
];

/**
 * One line per rule and page: the rule, its impact, what it asks, how many elements fail it, and the first few of
 * them with axe's own account of what is wrong (a contrast names both colours and the ratio).
 */
function describeViolations(violations: Awaited<ReturnType<AxeBuilder['analyze']>>['violations']): string[] {
  const lines: string[] = [];
  for (const v of violations) {
    if (v.impact !== 'serious' && v.impact !== 'critical' && v.id !== 'region') continue;
    const examples = v.nodes.slice(0, 3).map((node) => {
      const why = (node.failureSummary ?? '').split('\n').slice(1).join(' ').trim().slice(0, 200);
      return `\n    ${node.target.join(' ')}${why ? ` — ${why}` : ''}`;
    });
    lines.push(`${v.id} (${v.impact}, ${v.nodes.length} element${v.nodes.length === 1 ? '' : 's'}): ${v.help}${examples.join('')}`);
  }
  return lines;
}

// The structure of a page is the same in both themes (the theme only swaps colour variables), so the dark theme is
// checked for what colours decide; the light theme runs every rule.
const DARK_RULES = ['color-contrast', 'link-in-text-block'];

// Two halves of the pages per theme, as tests that may run on either browser worker beside the other suites: one
// test per theme was the run's longest by minutes. Each worker that runs one seeds its own data (beforeAll above).
test.describe.configure({ mode: 'parallel' });
const HALVES = [PAGES.slice(0, PAGES.findIndex((c) => c.name === 'contention')), PAGES.slice(PAGES.findIndex((c) => c.name === 'contention'))];

async function check(page: Page, theme: ThemeName, name: string, where: string) {
  const axe = new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']);
  if (theme === 'dark') axe.withRules(DARK_RULES);
  // In the page itself: the console has no frames, so axe's blank page for gathering frames' results is not needed.
  const results = await axe.setLegacyMode(true).analyze();
  await screenshot(page, `a11y-${name}-${theme}`);
  expect.soft(describeViolations(results.violations), `axe on ${where} (${theme})`).toEqual([]);
}

for (const theme of THEMES) {
  for (const [half, pages] of HALVES.entries()) {
    test(`the pages from ${pages[0].name} on (${half + 1} of ${HALVES.length}) in the ${theme} theme have no serious accessibility violation`, async ({ browser, baseURL }) => {
      test.setTimeout(pages.length * 30_000);
      // One signed-in tab for the half (every role, so every control a role can see is on the page), and a
      // signed-out one for the pages seen before signing in.
      const newTab = async () => {
        const context = await browser.newContext({ baseURL, viewport: { width: 1440, height: 900 }, colorScheme: theme, reducedMotion: 'reduce' });
        const url = new URL(baseURL!);
        await context.addCookies([{ name: THEME_COOKIE, value: theme satisfies ThemeName, domain: url.hostname, path: '/' }]);
        context.setDefaultTimeout(20_000);
        return { context, page: await context.newPage() };
      };
      const signedIn = await newTab();
      await useSessionOf(signedIn.context, baseURL!, [...ROLES]);
      const signedOut = pages.some((c) => c.signedOut) ? await newTab() : null;
      try {
        for (const c of pages) {
          await test.step(c.name, async () => {
            const { page } = c.signedOut ? signedOut! : signedIn;
            await page.goto(c.path());
            await c.ready(page);
            await check(page, theme, c.name, c.path());
            for (const next of c.then ?? []) {
              await next.open(page);
              await check(page, theme, next.name, `${c.path()} (${next.name})`);
            }
          });
        }
      } finally {
        await signedIn.context.close();
        await signedOut?.context.close();
      }
    });
  }
}
