/** The parts both deployables' OpenAPI documents describe alike: the error body (errors.ts) and the admin credentials (basic-auth.ts). */

/** `{ error: { code, message } }`, the body of every error answer (`errorHandler`). */
export const ERROR_BODY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['error'],
  properties: {
    // Nothing else: a stack or a store's error text would leak through extra fields.
    error: { type: 'object', additionalProperties: false, required: ['code', 'message'], properties: { code: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' }, message: { type: 'string' } } },
  },
};

/** The admin routes' HTTP Basic scheme (`requireAdmin`). */
export const ADMIN_BASIC_SCHEME = { type: 'http', scheme: 'basic', description: 'ADMIN_USER and ADMIN_PASSWORD; the scheme name in any case (RFC 7235)' };
