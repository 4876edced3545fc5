/** joi validation of query strings and bodies: a 400 naming the field, never a 500. */
import type { Request } from 'express';
import Joi from 'joi';
import { badRequest } from '@feed/http';

/** A 24-hex ObjectId, either case, lower-cased once: catalog, queue and history all key by lower-case hex. */
export const objectId = Joi.string().pattern(/^[0-9a-fA-F]{24}$/, 'ObjectId (24 hex characters)').lowercase();

/** A request body naming one video (SPEC C: bodies name a video `vid`). */
export const vidBody = Joi.object<{ vid: string }>({ vid: objectId.required() });

export function validate<T>(schema: Joi.Schema<T>, value: unknown): T {
  const result = schema.validate(value ?? {}, { abortEarly: true, convert: true, stripUnknown: false });
  if (result.error) throw badRequest(result.error.details[0].message.replace(/"/g, "'"));
  return result.value as T;
}

/** A number in a query as this API writes it: decimal digits, no sign but `-` (never on 0: `-0` is no 0-based page), no leading zero, no exponent, no space. */
const DECIMAL = /^(0|-?[1-9][0-9]*)$/;
const queryKeys = new WeakMap<Joi.ObjectSchema, Record<string, { type: string }>>();

/** The query, validated: numbers in decimal digits only (joi reads `2e1`, `+20`, `020` as 20), each key once. */
export function validateQuery<T>(schema: Joi.ObjectSchema<T>, req: Pick<Request, 'query'>): T {
  let keys = queryKeys.get(schema);
  if (!keys) queryKeys.set(schema, (keys = (schema.describe() as { keys?: Record<string, { type: string }> }).keys ?? {}));
  for (const [name, value] of Object.entries(req.query)) {
    if (!keys[name]) continue;
    if (Array.isArray(value)) throw badRequest(`'${name}' must be given once`);
    // An empty value is the schema's to judge (the page query reads it as absent).
    if (keys[name].type === 'number' && typeof value === 'string' && value !== '' && !DECIMAL.test(value)) throw badRequest(`'${name}' must be a whole number in decimal digits (no +, exponent, leading zero or space)`);
  }
  return validate(schema, req.query);
}
export const validateBody = <T>(schema: Joi.Schema<T>, req: Request) => {
  if (req.body !== undefined && (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body))) {
    throw badRequest('request body must be a JSON object');
  }
  return validate(schema, req.body);
};
