'use server';

import { revalidatePath } from 'next/cache';
import { failure, field, fieldList, type FormState } from '@/lib/http/form-state';
import { rememberCommitInSession, requireActionActor } from '@/lib/auth/server';
import { createUser, resetUserPassword, setUserDisabled, setUserRoles, unlockSignIn } from '@/lib/auth/users';

/** The users page's actions: admins only (`users.manage`), checked here and again in the domain functions. */

export async function createUserAction(_prev: FormState, form: FormData): Promise<FormState> {
  try {
    const actor = await requireActionActor('users.manage');
    const { user, oneTimePassword } = await createUser({ username: field(form, 'username'), roles: fieldList(form, 'roles') }, actor);
    await rememberCommitInSession();
    revalidatePath('/admin/users');
    return { status: 'ok', message: `Created ${user.username}.`, reveal: { label: `One-time password for ${user.username} (shown only now; they choose their own at first sign-in)`, value: oneTimePassword } };
  } catch (err) {
    return failure(err, 'creating a user');
  }
}

export async function setRolesAction(_prev: FormState, form: FormData): Promise<FormState> {
  try {
    const actor = await requireActionActor('users.manage');
    const user = await setUserRoles(field(form, 'userId'), fieldList(form, 'roles'), actor);
    await rememberCommitInSession();
    revalidatePath('/admin/users');
    return { status: 'ok', message: `${user.username}: roles saved.` };
  } catch (err) {
    return failure(err, 'changing roles');
  }
}

export async function setDisabledAction(_prev: FormState, form: FormData): Promise<FormState> {
  try {
    const actor = await requireActionActor('users.manage');
    const user = await setUserDisabled(field(form, 'userId'), field(form, 'disabled') === 'true', actor);
    await rememberCommitInSession();
    revalidatePath('/admin/users');
    return { status: 'ok', message: `${user.username} is ${user.disabled ? 'disabled and signed out everywhere' : 'enabled'}.` };
  } catch (err) {
    return failure(err, 'disabling a user');
  }
}

export async function resetPasswordAction(_prev: FormState, form: FormData): Promise<FormState> {
  try {
    const actor = await requireActionActor('users.manage');
    const { user, oneTimePassword } = await resetUserPassword(field(form, 'userId'), actor);
    await rememberCommitInSession();
    revalidatePath('/admin/users');
    return { status: 'ok', message: `${user.username} was signed out everywhere.`, reveal: { label: `New one-time password for ${user.username} (shown only now)`, value: oneTimePassword } };
  } catch (err) {
    return failure(err, 'resetting a password');
  }
}

export async function unlockSignInAction(_prev: FormState, form: FormData): Promise<FormState> {
  try {
    const actor = await requireActionActor('users.manage');
    const { user, clearedFailures } = await unlockSignIn(field(form, 'userId'), actor);
    await rememberCommitInSession();
    revalidatePath('/admin/users');
    return { status: 'ok', message: `${user.username} can sign in again (${clearedFailures} failed attempt${clearedFailures === 1 ? '' : 's'} forgotten).` };
  } catch (err) {
    return failure(err, 'unlocking sign-in');
  }
}
