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
  // A Blob, a Date or a class instance is an object to Zod with every optional field absent: refuse it as not the page's object.
  const plain = isPlainObject(input) && [Object.prototype, null].includes(Object.getPrototypeOf(input));
  const known = plain ? Object.fromEntries(Object.entries(input).filter(([k]) => Object.hasOwn(schema.shape, k))) : typeof input === 'object' && input !== null ? String(input) : input;
  return parseInput(schema, known);
}
