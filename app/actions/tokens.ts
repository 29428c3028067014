'use server';

import { revalidatePath } from 'next/cache';
import { failure, field, type FormState } from '@/lib/http/form-state';
import { rememberCommitInSession, requireActionActor } from '@/lib/auth/server';
import { createApiToken, revokeApiToken } from '@/lib/auth/tokens';

/** API tokens page: anyone signed in manages their own; revoking someone else's needs `tokens.manage` (checked in the domain). */

export async function createTokenAction(_prev: FormState, form: FormData): Promise<FormState> {
  try {
    const actor = await requireActionActor('tokens.own');
    const days = field(form, 'expiresInDays').trim();
    const { token, record } = await createApiToken({ name: field(form, 'name'), expiresInDays: days === '' ? undefined : days }, actor);
    await rememberCommitInSession();
    revalidatePath('/account/tokens');
    return { status: 'ok', message: `Created “${record.name}”.`, reveal: { label: 'Your new API token (shown only now: copy it into your client; it is stored only as a hash)', value: token } };
  } catch (err) {
    return failure(err, 'creating a token');
  }
}

export async function revokeTokenAction(_prev: FormState, form: FormData): Promise<FormState> {
  try {
    const actor = await requireActionActor('tokens.own');
    const record = await revokeApiToken(field(form, 'tokenId'), actor);
    await rememberCommitInSession();
    revalidatePath('/account/tokens');
    return { status: 'ok', message: `Revoked “${record.name}” (${record.prefix}…).` };
  } catch (err) {
    return failure(err, 'revoking a token');
  }
}
