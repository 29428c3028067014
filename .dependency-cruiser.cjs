/**
 * The layers of the code, lowest first (docs/ARCHITECTURE.md explains each). A file may import its own layer and the
 * layers below it, never one above: `npm run lint` fails on such an import, and on any two folders of lib/ that
 * import each other, even through others. Type-only imports count too: a type pulled from above ties the layers
 * together as much as a value does.
 */
const LAYERS = [
  { name: 'floor', path: '^lib/(shared/|env\\.ts$)' },
  { name: 'db', path: '^lib/db/' },
  { name: 'base', path: '^lib/(counts|contention|audit|live|search)/' },
  { name: 'guards', path: '^lib/(auth|leases|locks|dedup)/' },
  { name: 'engine', path: '^lib/intents/' },
  { name: 'features', path: '^lib/(events|bulk|pipeline|workers|replay|timeline|metrics|invariants|seed|console)/|^lib/housekeeping\\.ts$' },
  { name: 'doors', path: '^lib/(http|openapi)/' },
  { name: 'app', path: '^(app|components|scripts)/|^[^/]+\\.tsx?$' },
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...LAYERS.slice(0, -1).map((layer, i) => ({
      name: `${layer.name}-imports-above`,
      comment: `lib/ layer "${layer.name}" imports only itself and ${i === 0 ? 'nothing else of the project' : LAYERS.slice(0, i).map((l) => l.name).join(', ')} (docs/ARCHITECTURE.md)`,
      severity: 'error',
      from: { path: layer.path },
      to: { path: LAYERS.slice(i + 1).map((l) => `(${l.path})`).join('|') },
    })),
    {
      name: 'lib-folder-in-no-layer',
      comment: 'every folder of lib/ belongs to one layer: add a new one to LAYERS in .dependency-cruiser.cjs (docs/ARCHITECTURE.md says where)',
      severity: 'error',
      from: { path: '^lib/', pathNot: LAYERS.map((l) => `(${l.path})`).join('|') },
      to: {},
    },
    {
      name: 'no-folder-cycles',
      comment: 'two folders of lib/ import each other (directly or through others): one of them belongs below the other',
      severity: 'error',
      scope: 'folder',
      from: { path: '^lib/' },
      to: { circular: true },
    },
    {
      name: 'no-circular',
      comment: 'a file reaches itself through its imports at run time (a cycle of type-only imports vanishes when compiled)',
      severity: 'error',
      from: { path: '^(lib|app|components|scripts)/' },
      to: { circular: true, dependencyTypesNot: ['type-only'], viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules'] },
    exclude: { path: ['^(node_modules|generated|\\.next)/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'] },
  },
};
