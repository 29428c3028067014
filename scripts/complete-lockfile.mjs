// The npm registry reachable from these machines serves only the platform packages this machine can use
// (@next/swc-darwin-*, win32-*, … answer 404), so `npm install` writes a package-lock.json without them and
// `npm ci` then refuses the lock as out of sync. This adds an entry for each missing optional platform package,
// with the os/cpu it is built for, so `npm ci` skips it here exactly as it would on any other Linux machine.
// Run it after any `npm install` that rewrites the lock.
import { readFileSync, writeFileSync } from 'node:fs';

const OS = ['darwin', 'win32', 'linux', 'android', 'freebsd', 'openharmony', 'sunos', 'aix', 'netbsd', 'openbsd'];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'loong64', 'ppc64', 'riscv64', 's390x', 'mips64el'];

const lockPath = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
let added = 0;
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${path ? `${path}/` : ''}node_modules/${name}`;
    if (lock.packages[nested] || lock.packages[`node_modules/${name}`]) continue;
    const tokens = name.split('/').pop().split('-');
    const os = OS.find((o) => tokens.includes(o));
    const cpu = tokens.includes('eabi') || tokens.includes('gnueabihf') || tokens.includes('musleabihf') ? 'arm' : CPU.find((c) => tokens.includes(c));
    if (!os) continue; // not a platform package: leave it for npm to resolve
    const libc = tokens.includes('musl') || tokens.includes('musleabihf') ? ['musl'] : tokens.includes('gnu') || tokens.includes('gnueabihf') ? ['glibc'] : undefined;
    lock.packages[`node_modules/${name}`] = {
      version: String(spec).replace(/^[\^~=]/, ''),
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(libc ? { libc } : {}),
      optional: true,
      os: [os],
    };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} platform entries`);
