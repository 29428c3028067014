import { createTokenAction, revokeTokenAction } from '@/app/actions/tokens';
import { ActionForm } from '@/components/auth/ActionForm';
import styles from '@/components/auth/auth.module.css';
import { formatUtc } from '@/components/ui/time';
import { Forbidden } from '@/components/auth/Forbidden';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { listApiTokens } from '@/lib/auth/tokens';
import type { ApiTokenView } from '@/lib/auth/types';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'API tokens · Bridge Console' };

function TokenTable({ tokens, showOwner }: { tokens: ApiTokenView[]; showOwner: boolean }) {
  if (tokens.length === 0) return <p className={styles.muted}>None yet.</p>;
  return (
    <table className={styles.table}>
      <thead>
        <tr>
          {showOwner && <th>Owner</th>}
          <th>Name</th>
          <th>Token</th>
          <th>Created</th>
          <th>Last used</th>
          <th>Expires</th>
          <th>State</th>
        </tr>
      </thead>
      <tbody>
        {tokens.map((t) => (
          <tr key={t.id} data-testid={`token-${t.prefix}`}>
            {showOwner && <td>{t.username}</td>}
            <td>{t.name}</td>
            <td>
              <code>{t.prefix}…</code>
            </td>
            <td>{formatUtc(t.createdAt)}</td>
            <td>{t.lastUsedAt ? formatUtc(t.lastUsedAt) : '—'}</td>
            <td>{t.expiresAt ? formatUtc(t.expiresAt) : '—'}</td>
            <td>
              {t.revokedAt ? (
                <span className={styles.muted}>
                  revoked {formatUtc(t.revokedAt)} by {t.revokedBy}
                </span>
              ) : (
                <ActionForm
                  action={revokeTokenAction}
                  submitLabel="Revoke"
                  variant="danger"
                  inline
                  confirm={{
                    title: `Revoke “${t.name}”?`,
                    body: (
                      <p>
                        Every client sending <code>{t.prefix}…</code>
                        {showOwner ? ` (${t.username}’s token)` : ''} is refused (401) from now on. A revoked token cannot be restored: create a new one to
                        replace it.
                      </p>
                    ),
                    confirmLabel: 'Revoke token',
                  }}
                >
                  <input type="hidden" name="tokenId" value={t.id} />
                </ActionForm>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export default async function TokensPage() {
  const user = await requirePageUser('/account/tokens');
  if (!can(user, 'tokens.own')) return <Forbidden permission="tokens.own" />;
  const isAdmin = can(user, 'tokens.manage');
  const [own, all] = await Promise.all([listApiTokens(user), isAdmin ? listApiTokens(user, { all: true }) : Promise.resolve([])]);
  const others = all.filter((t) => t.userId !== user.userId);
  return (
    <div className={styles.page}>
      <h1>API tokens</h1>
      <p className={styles.muted}>
        Send <code>Authorization: Bearer &lt;token&gt;</code> to the JSON API. A token acts as you, with your roles; it is shown once when created
        and stored only as a hash.
      </p>
      <section className={styles.section}>
        <h2>New token</h2>
        <ActionForm action={createTokenAction} submitLabel="Create token" testId="create-token">
          <label className={styles.label}>
            Name (what uses it)
            <input className={styles.input} name="name" required maxLength={100} placeholder="e.g. deploy pipeline" />
          </label>
          <label className={styles.label}>
            Expires after (days, empty for never)
            <input className={styles.input} name="expiresInDays" type="number" min={1} max={3650} />
          </label>
        </ActionForm>
      </section>
      <section className={styles.section}>
        <h2>Your tokens</h2>
        <TokenTable tokens={own} showOwner={false} />
      </section>
      {isAdmin && (
        <section className={styles.section}>
          <h2>Everyone else’s tokens</h2>
          <TokenTable tokens={others} showOwner />
        </section>
      )}
    </div>
  );
}
