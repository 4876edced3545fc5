/** The parts both deployables' OpenAPI documents describe alike: the error body (errors.ts), the admin credentials (basic-auth.ts) and the builders' helpers. */

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

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ content: { 'application/json': { schema } } });

/** Small builders both documents use: a schema reference, a JSON body, a 2xx answer, an error answer, the 408 of slow clients. */
export const openApiParts = {
  ref,
  json,
  ok: (schema: object, description = 'OK') => ({ description, ...json(schema) }),
  error: (description: string) => ({ description, ...json(ref('Error')) }),
  /** Node's server answers any route so (SPEC C: slow clients are bounded). */
  slowClient: { 408: { description: 'The request was not received within HTTP_HEADERS_TIMEOUT_MS (headers) or HTTP_REQUEST_TIMEOUT_MS (whole request); no body' } },
};
