import { z } from 'zod';
import { PASSWORD_MAX, PASSWORD_MIN } from './password';
import { ROLES } from './permissions';

/** Zod at the auth boundaries: sign-in form, admin forms, token forms. */
export const usernameSchema = z
  .string({ error: 'is required' })
  .trim()
  .toLowerCase()
  .min(2, { error: 'must be at least 2 characters' })
  .max(64, { error: 'must be at most 64 characters' })
  .regex(/^[a-z0-9][a-z0-9._-]*$/, { error: 'may use letters, digits, dot, underscore and hyphen, starting with a letter or digit' });

export const newPasswordSchema = z
  .string({ error: 'is required' })
  .min(PASSWORD_MIN, { error: `must be at least ${PASSWORD_MIN} characters` })
  .max(PASSWORD_MAX, { error: `must be at most ${PASSWORD_MAX} characters` });

export const rolesSchema = z.array(z.enum(ROLES, { error: `must be one of ${ROLES.join(', ')}` }), { error: 'must be a list of roles' }).transform((roles) => [...new Set(roles)].sort((a, b) => ROLES.indexOf(a) - ROLES.indexOf(b)));

export const signInSchema = z.object({
  // Not the strict username rule: a mistyped name must fail like a wrong password, not with a format lesson.
  username: z.string({ error: 'is required' }).trim().toLowerCase().min(1, { error: 'is required' }).max(64, { error: 'must be at most 64 characters' }),
  password: z.string({ error: 'is required' }).min(1, { error: 'is required' }).max(PASSWORD_MAX, { error: `must be at most ${PASSWORD_MAX} characters` }),
});

export const createUserSchema = z.object({
  username: usernameSchema,
  roles: rolesSchema,
});

export const tokenNameSchema = z
  .string({ error: 'is required' })
  .trim()
  .min(1, { error: 'is required' })
  .max(100, { error: 'must be at most 100 characters' });

export const createTokenSchema = z.object({
  name: tokenNameSchema,
  /** Days until it stops working; none means until revoked. */
  expiresInDays: z.coerce.number({ error: 'must be a number of days' }).int({ error: 'must be whole days' }).min(1, { error: 'must be at least 1 day' }).max(3650, { error: 'must be at most 3650 days' }).optional(),
});

export const userIdSchema = z.uuid({ error: 'must be a user id' });
export const tokenIdSchema = z.uuid({ error: 'must be a token id' });
