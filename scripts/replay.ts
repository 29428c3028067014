/**
 * `npm run replay -- --scenario <name|all> [--scenario …] [--json <file>] [--size full|small] [--targets <file.json>]`
 *
 * Runs contention-replay scenarios against DATABASE_URL (or a throw-away embedded PostgreSQL when it is not set),
 * records the run in replay_runs like the console's button does, prints the verdicts and the comparison with the
 * previous finished run, and writes them as JSON (format: docs/REPLAY.md, "Doors"). Exit code: 0 all targets
 * met, 1 a target missed, 2 the run could not start or broke.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { scriptDatabase } from './replay-db';

const say = (line: string) => process.stderr.write(`[replay] ${line}\n`);

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', multiple: true, short: 's' },
      json: { type: 'string' },
      size: { type: 'string', default: 'full' },
      targets: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  const { SCENARIO_NAMES } = await import('../lib/replay/types');
  if (values.help) {
    console.log(`usage: npm run replay -- --scenario <name|all> [--scenario <name> …] [--json <file>] [--size full|small] [--targets <file.json>]\nscenarios: ${SCENARIO_NAMES.join(', ')}`);
    return 0;
  }
  const requested = (values.scenario ?? ['all']).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
  const scenarios = requested.includes('all') ? 'all' : requested;
  const targets = values.targets ? JSON.parse(readFileSync(values.targets, 'utf8')) : undefined;

  const { embedded } = await scriptDatabase(process.env.DATABASE_URL, say);
  const { runReplay, startReplaySchema } = await import('../lib/replay/runner');
  const { runWithComparison } = await import('../lib/replay/compare');
  const { parseInput } = await import('../lib/shared/validation');
  const { formatRun } = await import('../lib/replay/report');
  const { flushOutcomes } = await import('../lib/intents/outcomes');
  const { disconnectDb } = await import('../lib/db/client');
  const { DomainError } = await import('../lib/shared/errors');
  try {
    let last = '';
    const run = await runReplay(parseInput(startReplaySchema, { scenarios, size: values.size, targets }), 'cli', { name: `cli:${userInfo().username}` }, {
      environment: embedded ? 'development' : undefined,
      onProgress: (p) => {
        const line = `${p.done}/${p.total} ${p.current ?? ''} ${Math.round(p.fraction * 100)} % ${p.note}`;
        if (line !== last) say((last = line));
      },
    });
    const full = await runWithComparison(run.id);
    console.log(formatRun(run, full?.comparison));
    if (values.json) {
      writeFileSync(values.json, JSON.stringify({ run, previousRunId: full?.previous?.id ?? null, comparison: full?.comparison ?? null, failedChecks: full?.failedChecks ?? [] }, null, 2) + '\n');
      say(`wrote ${values.json}`);
    }
    // A smoke run (too small for the timing targets) met every check it could judge.
    return run.status !== 'finished' ? 2 : run.verdict === 'fail' ? 1 : 0;
  } catch (err) {
    if (err instanceof DomainError) {
      say(`refused: ${err.message}`);
      return 2;
    }
    throw err;
  } finally {
    await flushOutcomes().catch(() => undefined);
    await disconnectDb();
    await embedded?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error('[replay] failed:', err);
    process.exit(2);
  },
);
