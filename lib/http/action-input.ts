import type { z } from 'zod';
import { ValidationError } from '@/lib/shared/errors';
import { isPlainObject } from '@/lib/shared/json';
import { parseInput } from '@/lib/shared/validation';

/**
 * The server actions' one validation step: what the page sent, parsed by the domain's own schema, typed. The page
 * sends exactly its form's fields, so anything else (an actor name, a field of another form) is refused naming it,
 * as the API refuses it: a caller who crafts the request learns that the field does nothing instead of believing it
 * was applied. The domain function recognises the parsed value and does not parse it again; bad input throws the
 * ValidationError the page shows beside the field.
 */
export function actionInput<S extends z.ZodObject>(schema: S, input: unknown): z.infer<S> {
  // Zod reads fields off any object (a Blob, a Date, a FormData); the page only ever sends a plain object.
  if (!isPlainObject(input)) throw new ValidationError([{ field: 'input', message: 'must be an object of the form’s fields' }]);
  return parseInput(schema, input);
}
