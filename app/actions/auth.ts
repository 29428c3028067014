'use server';

import { redirect } from 'next/navigation';
import { recordAuthEvent } from '@/lib/auth/events';
import { failure, field, type FormState } from '@/lib/http/form-state';
import { assertActionFromConsole, clearSessionCookie, currentUser, readSessionSecret, requestClientInfo, safeReturnPath, setSessionCookie } from '@/lib/auth/server';
import { revokeSession, rotateSession } from '@/lib/auth/sessions';
import { changeOwnPassword, signIn } from '@/lib/auth/users';
import { ValidationError } from '@/lib/shared/errors';

/** Sign-in form: rate-limited in lib/auth/users.ts; on success sets the session cookie and goes where it was asked. */
export async function signInAction(_prev: FormState, form: FormData): Promise<FormState> {
  const client = await requestClientInfo();
  const username = field(form, 'username');
  let result;
  try {
    result = await signIn({ username, password: field(form, 'password') }, client);
  } catch (err) {
    return { ...failure(err, 'sign-in'), values: { username: username.slice(0, 64) } };
  }
  await setSessionCookie(result.secret, result.session.absoluteExpiresAt);
  redirect(result.user.mustChangePassword ? '/account/password' : safeReturnPath(field(form, 'next')));
}

export async function signOutAction(): Promise<void> {
  const actor = await currentUser();
  const client = await requestClientInfo();
  await revokeSession(await readSessionSecret());
  await clearSessionCookie();
  if (actor) await recordAuthEvent({ action: 'auth.sign_out', actor: actor.name, subject: actor.name, ip: client.ip });
  redirect('/sign-in');
}

/** Own password: allowed with a one-time password (that is what it is for); the session is rotated afterwards. */
export async function changePasswordAction(_prev: FormState, form: FormData): Promise<FormState> {
  const actor = await currentUser();
  if (!actor) redirect('/sign-in?next=/account/password');
  try {
    await assertActionFromConsole();
    const newPassword = field(form, 'newPassword');
    if (newPassword !== field(form, 'confirmPassword')) throw new ValidationError([{ field: 'confirmPassword', message: 'does not match the new password' }]);
    await changeOwnPassword({ currentPassword: field(form, 'currentPassword'), newPassword }, actor);
    const secret = await readSessionSecret();
    const rotated = secret ? await rotateSession(secret, await requestClientInfo()) : null;
    if (rotated) await setSessionCookie(rotated.secret, rotated.session.absoluteExpiresAt);
  } catch (err) {
    return failure(err, 'password change');
  }
  redirect('/');
}
