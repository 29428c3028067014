import type { z } from 'zod';
import { ValidationError } from '@/lib/shared/errors';
import { parseInput } from '@/lib/shared/validation';

/** A plain `{ … }` object, as a page's form sends: not an array, a Blob, FormData or any other class instance. */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The server actions' one validation step: what the page sent, parsed by the domain's own schema, typed. Anything
 * but a plain object is refused; of an object only the schema's fields are taken (an action is not the public API:
 * anything else it carries, such as an actor name, is ignored rather than refused). The domain function recognises
 * the parsed value and does not parse it again; bad input throws the ValidationError the page shows by the field.
 */
export function actionInput<S extends z.ZodObject>(schema: S, input: unknown): z.infer<S> {
  if (!isPlainRecord(input)) throw new ValidationError([{ field: 'body', message: 'must be an object' }]);
  return parseInput(schema, Object.fromEntries(Object.entries(input).filter(([k]) => Object.hasOwn(schema.shape, k))));
}
