// Runs `prisma generate` without Prisma's native schema engine, which these machines cannot download:
// the Prisma 7 client (query compiler + @prisma/adapter-pg) needs no engine, and the generator only needs
// PRISMA_SCHEMA_ENGINE_BINARY to point at an existing file so it skips the download.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1' };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  const dir = join(tmpdir(), 'bridge-console-prisma');
  const stub = join(dir, 'no-schema-engine');
  if (!existsSync(stub)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(stub, '#!/bin/sh\necho "schema engine not available on this machine" >&2\nexit 1\n');
    chmodSync(stub, 0o755);
  }
  env.PRISMA_SCHEMA_ENGINE_BINARY = stub;
}
const result = spawnSync('npx', ['prisma', 'generate'], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
