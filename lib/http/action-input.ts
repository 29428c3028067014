import type { z } from 'zod';
import { isPlainObject } from '@/lib/shared/json';
import { parseInput } from '@/lib/shared/validation';

/**
 * The server actions' one validation step: what the page sent, parsed by the domain's own schema, typed. Only the
 * schema's fields are taken from the page's object (an action is not the public API: anything else it carries, such
 * as an actor name, is ignored rather than refused). The domain function recognises the parsed value and does not
 * parse it again; bad input throws the ValidationError the page shows beside the field.
 */
export function actionInput<S extends z.ZodObject>(schema: S, input: unknown): z.infer<S> {
  const known = isPlainObject(input) ? Object.fromEntries(Object.entries(input).filter(([k]) => Object.hasOwn(schema.shape, k))) : input;
  return parseInput(schema, known);
}
