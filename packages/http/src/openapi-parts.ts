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

/** Properties that share one schema. */
export const typed = (schema: object, ...names: string[]) => Object.fromEntries(names.map((name) => [name, schema]));
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: object) => ({ content: { 'application/json': { schema } } });
export const ok = (schema: object, description = 'OK') => ({ description, ...json(schema) });
/** An error answer: its description and the error body (`Error`, ERROR_BODY_SCHEMA, in both documents' components). */
export const error = (description: string) => ({ description, ...json(ref('Error')) });
/** Node's server answers any route so (SPEC C: slow clients are bounded). */
export const slowClient = { 408: { description: 'The request was not received within HTTP_HEADERS_TIMEOUT_MS (headers) or HTTP_REQUEST_TIMEOUT_MS (whole request); no body' } };

/** The `Readiness` schema of /readyz: its statuses (described) and each store's state. */
export const readinessSchema = (statuses: string[], description: string) => ({
  type: 'object',
  additionalProperties: false,
  required: ['status', 'redis', 'mongo'],
  properties: { status: { type: 'string', enum: statuses, description }, redis: { type: 'string', enum: ['ok', 'down'] }, mongo: { type: 'string', enum: ['ok', 'down'] } },
});

/** The probes, the metrics and the document itself, as both deployables serve them (tag `operations`, no credentials); the texts are each one's. */
export function operationsPaths(text: { liveness: string; readiness: string; notReady: string; metrics: string; document: string }) {
  const get = (operationId: string, summary: string, description: string, responses: object) => ({ get: { tags: ['operations'], operationId, summary, description, security: [], responses: { ...responses, ...slowClient } } });
  return {
    '/healthz': get('liveness', 'Liveness', text.liveness, { 200: ok({ type: 'object', additionalProperties: false, required: ['status'], properties: { status: { const: 'ok' } } }) }),
    '/readyz': get('readiness', 'Readiness', text.readiness, { 200: ok(ref('Readiness')), 503: { description: text.notReady, ...json(ref('Readiness')) } }),
    '/metrics': get('metrics', 'Prometheus metrics', text.metrics, { 200: { description: 'OK', content: { 'text/plain': { schema: { type: 'string' } } } } }),
    '/openapi.json': get('openApiDocument', 'This document', text.document, { 200: ok({ type: 'object' }) }),
  };
}

/** An operation as both builders declare it; their `operation()` turns `tag` into `tags` and adds the statuses every route of theirs answers. */
export interface OperationFields<Tag extends string> {
  operationId: string;
  tag: Tag;
  summary: string;
  description: string;
  security: object[];
  parameters?: object[];
  requestBody?: object;
  responses: Record<string, object>;
}

interface DocumentedOperation {
  operationId: string;
  summary: string;
  description: string;
  parameters?: Array<{ name?: string; in?: string }>;
  responses: Record<string, { description: string; content?: unknown }>;
}

/** `camelCase` of a path, for the operation ids generated per path. */
const pathId = (path: string) => path.replace(/(.)\/$/, '$1/index').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase());

/** `paths` plus what every path answers (http-semantics.ts): HEAD beside each GET, OPTIONS everywhere (204 with `Allow`). */
export function methodsOnEveryPath<T extends Record<string, Record<string, DocumentedOperation>>>(paths: T, note: (path: string) => string, responses: Record<string, object>): T {
  const documented = { ...paths };
  for (const [path, operations] of Object.entries(paths)) {
      const { get } = operations;
      const head = get && {
        ...get,
        operationId: `${get.operationId}Head`,
        summary: `${get.summary} (headers only)`,
        description: `${get.description} HEAD answers as GET would, with no body, and changes nothing.`,
        responses: Object.fromEntries(Object.entries(get.responses).map(([status, { content: _body, ...response }]) => [status, response])),
      };
      const options = {
        tags: ['operations'],
        operationId: `options${pathId(path)}`,
        summary: 'Methods of this path',
        description: `The methods this path answers, in Allow; no credentials needed.${note(path)}`,
        security: [],
        parameters: (Object.values(operations)[0].parameters ?? []).filter((parameter) => parameter.in === 'path').map(({ name }) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
        responses: { 204: { description: 'No content', headers: { Allow: { required: true, description: 'The methods of this path, e.g. GET, HEAD', schema: { type: 'string' } } } }, ...responses },
      };
    Object.assign(documented, { [path]: { ...operations, ...(head ? { head } : {}), options } });
  }
  return documented;
}
