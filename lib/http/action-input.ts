import type { z } from 'zod';
import { ValidationError } from '@/lib/shared/errors';
import { isPlainObject } from '@/lib/shared/json';
import { parseInput } from '@/lib/shared/validation';

/**
 * The server actions' one validation step: what the page sent, parsed by the domain's own schema, typed. Only the
 * schema's fields are taken from the page's object (an action is not the public API: anything else it carries, such
 * as an actor name, is ignored rather than refused). The domain function recognises the parsed value and does not
 * parse it again; bad input throws the ValidationError the page shows beside the field.
 */
export function actionInput<S extends z.ZodObject>(schema: S, input: unknown): z.infer<S> {
  // Zod reads fields off any object (a Blob, a Date, a FormData); the page only ever sends a plain object.
  if (!isPlainObject(input)) throw new ValidationError([{ field: 'input', message: 'must be an object of the form’s fields' }]);
  const known = Object.fromEntries(Object.entries(input).filter(([k]) => Object.hasOwn(schema.shape, k)));
  return parseInput(schema, known);
}
