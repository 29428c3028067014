import { z } from 'zod';
import { storable, STORABLE_MESSAGE } from './text';

/** Fields that several modules validate the same way, each with one schema. */
export const intentIdSchema = z.uuid({ error: 'must be a UUID' });

/** A name to filter by (a source, an actor): 1–255 characters of storable text, trimmed. */
export const filterNameSchema = z
  .string({ error: 'must be a string' })
  .trim()
  .min(1, { error: 'must not be empty' })
  .max(255, { error: 'must be at most 255 characters' })
  .refine(storable, { error: STORABLE_MESSAGE });
