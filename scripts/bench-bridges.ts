/** Loaded by the workers benchmark's worker processes (PIPELINE_BRIDGE_MODULES): a bridge that does nothing. */
import { registerBridge } from '../lib/pipeline/bridges';

registerBridge({ name: 'noop', description: 'does nothing (benchmark)', accepts: ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED'], run: async () => ({}) }, { replace: true });
