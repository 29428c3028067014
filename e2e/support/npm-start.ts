import { expect } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../lib/db/embedded';
import { root } from '../../scripts/next-server';

/**
 * `npm start` as a new user runs it: `node --import tsx scripts/start.ts` (package.json) in its own process group with no DATABASE_URL (so it
 * starts the embedded PostgreSQL, seeds the demo data on the first run and runs its default worker), stopped with
 * SIGINT to the whole group, which is what Ctrl-C in a terminal does. Its data folder is a fresh temporary one that
 * outlives a stop, so a second start is a restart. Every line it prints is kept, in order.
 */
export type NpmStart = {
  url: string;
  /** An admin API token provisioned through CONSOLE_BOOTSTRAP_TOKEN. */
  authorization: string;
  lines: string[];
  /** Ctrl-C; resolves with the exit code once every process of the group is gone. */
  ctrlC: () => Promise<number | null>;
};

export function newDataDir(): string {
  const parent = mkdtempSync(join(tmpdir(), 'bridge-npm-start-'));
  // As root, PostgreSQL runs as its own user, which must be able to reach the data folder.
  chmodSync(parent, 0o755);
  return join(parent, 'postgres');
}

export async function npmStart(dataDir: string, options: { token?: string; env?: Record<string, string> } = {}): Promise<NpmStart> {
  const token = options.token ?? `bc_${randomBytes(24).toString('base64url')}`;
  const port = await freePort();
  const env: Record<string, string> = {};
  // The user's shell, not the test run's: no database, environment or services of the browser tests.
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(DATABASE_URL|NATS_URL|REDIS_URL|EMBEDDED_PG_PORT|PORT|HOST|BRIDGE_.*|E2E_.*)$/.test(key)) env[key] = value;
  }
  Object.assign(env, { BRIDGE_DATA_DIR: dataDir, PORT: String(port), CONSOLE_BOOTSTRAP_TOKEN: token, NEXT_TELEMETRY_DISABLED: '1' }, options.env);

  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], { cwd: root, env: env as NodeJS.ProcessEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  // 'close', not 'exit': a process can exit with its last lines still in the pipe, unread.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  let ready: (url: string) => void;
  let failed: (err: Error) => void;
  const up = new Promise<string>((resolve, reject) => {
    ready = resolve;
    failed = reject;
  });
  for (const stream of [child.stdout!, child.stderr!]) {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        const match = /Bridge Console is ready: (\S+)/.exec(line);
        if (match) ready(match[1]);
      }
    });
  }
  void exited.then((code) => failed(new Error(`npm start exited (code ${code}) before it was ready:\n${lines.join('\n')}`)));

  const ctrlC = async () => {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGINT');
    const code = await exited;
    // The group is gone only when its last process is: the database and the worker included.
    await waitForGroupToEnd(child.pid!);
    return code;
  };
  try {
    const url = await up;
    return { url, authorization: `Bearer ${token}`, lines, ctrlC };
  } catch (err) {
    await ctrlC();
    throw err;
  }
}

async function waitForGroupToEnd(pgid: number): Promise<void> {
  const alive = () => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  await expect.poll(alive, { message: `process group ${pgid} to end`, timeout: 60_000 }).toBe(false);
}

/** Runs a shell script with bash (`set -euo pipefail`), resolving with its output and exit code. */
export function runBash(script: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // A person's shell: the test runner's FORCE_COLOR would make `node -p` print numbers in colour codes.
    const { FORCE_COLOR: _colour, ...shell } = process.env;
    const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], { cwd: root, env: { ...shell, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
