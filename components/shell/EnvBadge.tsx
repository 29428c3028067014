import styles from './shell.module.css';

export type BridgeEnv = 'development' | 'staging' | 'production';

const LABEL: Record<BridgeEnv, string> = { development: 'Development', staging: 'Staging', production: 'PRODUCTION' };

/** Which environment this console acts on; production is loud on purpose. */
export function EnvBadge({ env }: { env: BridgeEnv }) {
  return (
    <span className={`${styles.envBadge} ${styles[`env_${env}`]}`} data-testid="env-badge" data-env={env} title={`Environment: ${env}`}>
      <span className="visually-hidden">Environment: </span>
      {LABEL[env]}
    </span>
  );
}
