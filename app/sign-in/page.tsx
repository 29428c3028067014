import { redirect } from 'next/navigation';
import { SignInForm } from '@/components/auth/SignInForm';
import styles from '@/components/auth/auth.module.css';
import { currentUser, safeReturnPath } from '@/lib/auth/server';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Sign in · Bridge Console' };

export default async function SignInPage({ searchParams }: { searchParams: Promise<{ next?: string | string[] }> }) {
  const raw = (await searchParams).next;
  const next = safeReturnPath(Array.isArray(raw) ? raw[0] : raw);
  if (await currentUser()) redirect(next);
  return (
    <div className={styles.narrow}>
      <h1>Bridge Console</h1>
      <p className="muted">Sign in with the username and password an administrator gave you.</p>
      <SignInForm next={next} />
    </div>
  );
}
