import { describe, expect, it } from 'vitest';
import type { PipelineRunRecord, PipelineStep } from '@/lib/pipeline/types';
import { failedAttempts } from './failed-attempts';

const step = (bridge: string, status: PipelineStep['status'], extra: Partial<PipelineStep> = {}): PipelineStep => ({
  bridge,
  status,
  startedAt: '2026-11-27T10:00:00.000Z',
  finishedAt: '2026-11-27T10:00:01.000Z',
  ...extra,
});
const run = (attempt: number, status: PipelineRunRecord['status'], steps: PipelineStep[], extra: Partial<PipelineRunRecord> = {}): PipelineRunRecord => ({
  id: `run-${attempt}`,
  intentId: 'i',
  round: 1,
  attempt,
  mode: 'FAILFAST',
  status,
  door: 'worker',
  actor: 'worker-1',
  startedAt: `2026-11-27T10:0${attempt}:00.000Z`,
  finishedAt: `2026-11-27T10:0${attempt}:02.000Z`,
  steps,
  ...extra,
});

describe('failedAttempts', () => {
  it('lists each failed step of each failed run, newest first, with its attempt, time, bridge and error', () => {
    const runs = [
      run(2, 'failed', [step('input', 'replayed'), step('ledger', 'failed', { error: 'bridge_failed: closed', finishedAt: '2026-11-27T10:02:01.500Z' })]),
      run(1, 'finished_with_errors', [step('input', 'completed'), step('ledger', 'failed', { error: 'timeout' }), step('notify', 'failed', { error: 'smtp down' })], { mode: 'CONTINUE' }),
    ];
    expect(failedAttempts(runs)).toEqual([
      { runId: 'run-2', round: 1, attempt: 2, at: '2026-11-27T10:02:01.500Z', door: 'worker', actor: 'worker-1', bridge: 'ledger', error: 'bridge_failed: closed' },
      { runId: 'run-1', round: 1, attempt: 1, at: '2026-11-27T10:00:01.000Z', door: 'worker', actor: 'worker-1', bridge: 'ledger', error: 'timeout' },
      { runId: 'run-1', round: 1, attempt: 1, at: '2026-11-27T10:00:01.000Z', door: 'worker', actor: 'worker-1', bridge: 'notify', error: 'smtp down' },
    ]);
  });

  it('leaves out runs that did not fail, and gives an abandoned run its own error and the step it was on', () => {
    const runs = [
      run(3, 'succeeded', [step('input', 'completed')]),
      run(2, 'interrupted', [step('input', 'completed')]),
      run(1, 'abandoned', [step('input', 'abandoned', { finishedAt: null })], { error: 'its worker stopped heartbeating; the claim was rescued' }),
    ];
    expect(failedAttempts(runs)).toEqual([
      { runId: 'run-1', round: 1, attempt: 1, at: '2026-11-27T10:01:02.000Z', door: 'worker', actor: 'worker-1', bridge: 'input', error: 'its worker stopped heartbeating; the claim was rescued' },
    ]);
    expect(failedAttempts([run(1, 'failed', [], { finishedAt: null })])[0]).toMatchObject({ bridge: null, at: '2026-11-27T10:01:00.000Z', error: 'the run ended failed without an error recorded' });
  });
});
