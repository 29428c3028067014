import { z } from 'zod';
import { wholeNumber } from '@/lib/shared/strict';
import { storable, STORABLE_MESSAGE } from '@/lib/shared/text';
import { PASSWORD_MAX, PASSWORD_MIN } from './password';
import { ROLES } from './permissions';

// Zod at the auth boundaries: sign-in form, admin forms, token forms.

/** The username rule in words: the users page shows it beside the field, and refusals repeat it (one issue per refusal: `abort`). */
export const USERNAME_RULE = '2 to 64 characters: letters a–z, digits, dot, underscore or hyphen, starting with a letter or digit (capitals become lowercase)';

const USERNAME_CHARS = /^[a-z0-9._-]*$/;

export const usernameSchema = z
  .string({ error: 'is required' })
  .trim()
  .toLowerCase()
  .min(1, { error: 'is required', abort: true })
  .min(2, { error: `is too short: use ${USERNAME_RULE}`, abort: true })
  .max(64, { error: `is too long: use ${USERNAME_RULE}`, abort: true })
  .regex(USERNAME_CHARS, {
    error: (issue) => {
      const bad = [...new Set([...String(issue.input)].filter((c) => !/[a-z0-9._-]/.test(c)))].map((c) => (c === ' ' ? 'a space' : `"${c}"`));
      return `may not contain ${bad.join(', ')}: use ${USERNAME_RULE}`;
    },
    abort: true,
  })
  .regex(/^[a-z0-9]/, { error: `must start with a letter or digit: use ${USERNAME_RULE}` });

export const newPasswordSchema = z
  .string({ error: 'is required' })
  .min(PASSWORD_MIN, { error: `must be at least ${PASSWORD_MIN} characters` })
  .max(PASSWORD_MAX, { error: `must be at most ${PASSWORD_MAX} characters` });

/**
 * At least one role: a user without any can sign in but open no page at all. `viewer` is the least there is.
 */
export const ROLES_REQUIRED = 'must include at least one role (viewer, to read everything and change nothing)';

export const rolesSchema = z
  .array(z.enum(ROLES, { error: `must be one of ${ROLES.join(', ')}` }), { error: 'must be a list of roles' })
  .min(1, { error: ROLES_REQUIRED })
  .transform((roles) => [...new Set(roles)].sort((a, b) => ROLES.indexOf(a) - ROLES.indexOf(b)));

export const signInSchema = z.object({
  // Not the strict username rule: a mistyped name must fail like a wrong password, not with a format lesson.
  username: z.string({ error: 'is required' }).trim().toLowerCase().min(1, { error: 'is required' }).max(64, { error: 'must be at most 64 characters' }).refine(storable, { error: STORABLE_MESSAGE }),
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
  .max(100, { error: 'must be at most 100 characters' })
  .refine(storable, { error: STORABLE_MESSAGE });

export const createTokenSchema = z.object({
  name: tokenNameSchema,
  /** Days until it stops working; none means until revoked. */
  expiresInDays: wholeNumber({ min: 1, max: 3650, what: 'a whole number of days' }).optional(),
});

export const userIdSchema = z.uuid({ error: 'must be a user id' });

/** The users page's search and page position, from its URL: a name fragment, and the username to continue after. */
export const userListSchema = z.object({
  q: z.string({ error: 'must be text' }).trim().max(64, { error: 'is too long: a username has at most 64 characters' }).optional(),
  after: z.string({ error: 'must be text' }).max(64, { error: 'is too long: a username has at most 64 characters' }).optional(),
});
export const tokenIdSchema = z.uuid({ error: 'must be a token id' });
