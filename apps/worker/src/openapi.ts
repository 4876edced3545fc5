/**
 * OpenAPI 3.1 description of the worker's own surface (probes, metrics, inspector), at
 * /openapi.json. bull-board's dashboard is named, not described (`x-unspecified-paths`). Checked
 * by `redocly lint` and against every response in the tests.
 */
import { ADMIN_BASIC_SCHEME, ERROR_BODY_SCHEMA, error, json, methodsOnEveryPath, ok, operationsPaths, readinessSchema, ref, slowClient, typed, type OperationFields } from '@feed/http';
import { VERSION_PATTERN } from '@feed/storage';

const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });

const adminRefusals = { 401: error('Missing or invalid admin credentials (ADMIN_USER / ADMIN_PASSWORD); a WWW-Authenticate challenge'), 503: error('A store did not answer within 2 s') };
const adminSecurity = [{ adminBasic: [] }];

type Operation = OperationFields<'operations' | 'inspector'>;

/** No 500 is documented: the error handler's answer to a bug is a drift the contract check reports. */
const operation = ({ tag, responses, ...fields }: Operation) => ({ tags: [tag], ...fields, responses: { ...responses, ...slowClient } });
const html = (description: string) => ({ description, content: { 'text/html': { schema: { type: 'string' } } } });

const counts = { type: 'object', additionalProperties: { type: 'integer', minimum: 0 } };

/** bull-board's job dashboard (app.ts mounts it here). */
export const DASHBOARD_PATH = '/admin/queues';

export const workerOpenApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Short-video feed worker',
    version: '1.0.0',
    description: "The worker's HTTP surface: probes and metrics for the orchestrator, and on-call's queue inspector (behind the admin credentials). The job dashboard at /admin/queues is bull-board's.",
  },
  servers: [{ url: '/', description: 'The host that served this document' }],
  'x-unspecified-paths': [{ prefix: DASHBOARD_PATH, description: "bull-board's job dashboard and its JSON API (behind the admin credentials): bull-board's own, not described here" }],
  tags: [
    { name: 'operations', description: 'Probes, metrics and this document: no credentials' },
    { name: 'inspector', description: "On-call's queue inspector (R20, R23): behind the admin credentials (HTTP Basic)" },
  ],
  components: {
    securitySchemes: { adminBasic: ADMIN_BASIC_SCHEME },
    schemas: {
      Error: ERROR_BODY_SCHEMA,
      Readiness: readinessSchema(['ready', 'unavailable'], 'unavailable once either store has failed every probe for 3 s (a store slow for a moment is `down` in the body, still ready)'),
      Pointers: { type: 'object', additionalProperties: false, required: ['current', 'previous', 'shadow'], properties: typed({ type: ['string', 'null'] }, 'current', 'previous', 'shadow') },
      VersionReport: {
        type: 'object',
        additionalProperties: false,
        required: ['version', 'role', 'meta', 'complete', 'queueLength', 'ttlSeconds', 'usersWithOffset', 'fullBlockRatio', 'compositions'],
        properties: {
          version: { type: 'string', pattern: VERSION_PATTERN.source },
          role: { type: 'array', items: { type: 'string', enum: ['current', 'previous', 'shadow'] } },
          meta: { type: ['object', 'null'], description: "The build's meta hash: build id, sizes, blocks, offset buckets, timings" },
          complete: { type: 'boolean', description: "Whether the version's keys are whole: its meta, and a queue of exactly meta.length ids (VersionStore.completeness)" },
          problem: { type: 'string', description: 'What is not whole, when complete is false' },
          queueLength: { type: 'integer', minimum: 0 },
          ttlSeconds: { type: 'integer', description: "The queue key's TTL (-2: gone, -1: none)" },
          usersWithOffset: { type: 'integer', minimum: 0 },
          fullBlockRatio: { type: 'number', minimum: 0, maximum: 1, description: 'Blocks that are exactly 17 high + 3 new, over all blocks' },
          compositions: { ...counts, description: 'Blocks by composition, e.g. "17+3": 10' },
        },
      },
      VersionDiff: {
        type: 'object',
        additionalProperties: false,
        required: ['base', 'other', 'baseLength', 'otherLength', 'overlap', 'onlyInBase', 'onlyInOther', 'duplicatesInOther'],
        properties: {
          ...typed({ type: 'string' }, 'base', 'other'),
          ...typed({ type: 'integer', minimum: 0 }, 'baseLength', 'otherLength'),
          overlap: { type: 'number', minimum: 0, maximum: 1, description: "Ids in both queues over the larger queue's length" },
          ...typed({ type: 'integer', minimum: 0 }, 'onlyInBase', 'onlyInOther', 'duplicatesInOther'),
        },
      },
      HeldVersion: {
        type: 'object',
        required: ['version', 'buildId', 'heldAt', 'current', 'verdict', 'promote'],
        properties: {
          version: { type: 'string' },
          buildId: { type: 'string' },
          heldAt: { type: 'string', format: 'date-time' },
          current: { type: ['string', 'null'], description: 'current when it was judged' },
          verdict: { type: 'object', required: ['outcome', 'reasons'], properties: { outcome: { type: 'string' }, reasons: { type: 'array', items: ref('HoldReason') } }, description: "The release gate's verdict (R23): outcome, reasons, each compared figure" },
          promote: {
            type: 'object',
            required: ['command', 'endpoint', 'dashboardJob'],
            properties: { command: { type: 'string' }, endpoint: { type: 'string' }, dashboardJob: { type: 'string' } },
            description: 'The one action that makes it current, three ways',
          },
        },
      },
      HoldReason: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string', description: 'e.g. length-drop, candidate-drop' }, message: { type: 'string' } } },
      BuildSchedule: {
        type: 'object',
        additionalProperties: false,
        required: ['nextBuildAt', 'nextBuildAtLocal', 'lastRepair'],
        properties: {
          nextBuildAt: { type: ['string', 'null'], format: 'date-time', description: 'The next run BullMQ has scheduled; null when the scheduler is missing' },
          nextBuildAtLocal: { type: ['string', 'null'], description: 'The same instant in the business time zone, with its name' },
          error: { type: 'string', description: "The scheduler is missing, or the controller stopped a repair (R21)" },
          lastRepair: { type: ['object', 'null'], additionalProperties: { type: 'string' } },
        },
      },
      InspectorSummary: {
        type: 'object',
        description: "The inspector page's data",
        additionalProperties: false,
        required: ['pointers', 'held', 'versions', 'shadow', 'shadowDiff', 'scores', 'rollout', 'schedule', 'readout', 'ramp', 'audit'],
        properties: {
          pointers: ref('Pointers'),
          held: nullable(ref('HeldVersion')),
          versions: { type: 'array', items: ref('VersionReport'), description: 'The last week of versions in Redis, newest first' },
          shadow: nullable(ref('VersionReport')),
          shadowDiff: nullable(ref('VersionDiff')),
          scores: {
            type: ['object', 'null'],
            description: "recommendScore of the head of current's queue (up to 2000), in 12 equal-width buckets; a stored score that is no finite number (string, NaN, Infinity) is counted in `odd`, never bucketed",
            required: ['version', 'sampled', 'buckets', 'odd'],
            properties: {
              version: { type: 'string' },
              sampled: { type: 'integer', minimum: 0 },
              buckets: { type: 'array', items: { type: 'object', required: ['from', 'to', 'count'], properties: { from: { type: 'number' }, to: { type: 'number' }, count: { type: 'integer', minimum: 0 } } } },
              odd: { type: 'object', required: ['count', 'ids'], properties: { count: { type: 'integer', minimum: 0 }, ids: { type: 'array', items: { type: 'string' }, description: 'The first five odd videos' } } },
            },
          },
          rollout: { type: 'object', required: ['enabled', 'percent'], properties: { enabled: { type: 'boolean' }, percent: { type: 'integer', minimum: 0, maximum: 100 } }, description: 'The rollout in force and where each value comes from' },
          schedule: ref('BuildSchedule'),
          readout: {
            type: 'array',
            description: 'The V2 vs legacy readout of the last 24 h (D7): per variant, pages, views and rates (null without views)',
            items: { type: 'object', required: ['variant', 'pages', 'views'], properties: { variant: { type: 'string', enum: ['ring', 'legacy'] }, pages: { type: 'integer', minimum: 0 }, views: { type: 'integer', minimum: 0 } } },
          },
          ramp: { type: ['object', 'null'], description: 'The rollout ramp (R23): its steps and verdicts; `{ error }` when unreadable; null when none' },
          audit: { type: 'array', items: { type: 'object', required: ['action', 'actor', 'via'], properties: { action: { type: 'string' }, actor: { type: 'string' }, via: { type: 'string' } } }, description: "On-call's last 50 audit entries (D6), newest first" },
        },
      },
      Promoted: {
        type: 'object',
        additionalProperties: false,
        required: ['version', 'status', 'replaced', 'current', 'reasons'],
        properties: {
          version: { type: 'string', pattern: '^\\d{8}$' },
          status: { type: 'string', enum: ['promoted', 'published', 'dismissed'], description: 'promoted: current now; published: its live keys, current a newer day; dismissed: nothing published' },
          replaced: { type: ['string', 'null'], description: 'The version that was current' },
          current: { type: ['string', 'null'], description: 'The version current now' },
          reasons: { type: 'array', items: ref('HoldReason'), description: 'Why the release gate had held it' },
        },
      },
    },
  },
  paths: methodsOnEveryPath({
    ...operationsPaths({
      liveness: 'The process answers (independent of both stores).',
      readiness: 'Ready while both stores answer (a store fails readiness once it failed every probe for 3 s): without either a worker can neither build nor show its dashboard.',
      notReady: 'A store does not answer',
      metrics: "The worker's metrics in the Prometheus text format.",
      document: "The OpenAPI 3.1 document of the worker's HTTP surface.",
    }),
    [DASHBOARD_PATH]: {
      get: operation({
        operationId: 'dashboard',
        tag: 'inspector',
        summary: 'The job dashboard',
        description: "bull-board's page: on-call watches builds and adds a job (every job it starts is audited, D6). Its JSON API below this path is bull-board's.",
        security: adminSecurity,
        responses: { 200: html('The dashboard page'), ...adminRefusals },
      }),
    },
    '/admin/inspector': {
      get: operation({
        operationId: 'inspectorPageRedirect',
        tag: 'inspector',
        summary: 'To the inspector page',
        description: 'The page is at `/admin/inspector/`: it loads `api/summary` relative to itself.',
        security: adminSecurity,
        responses: { 301: { description: 'To /admin/inspector/', headers: { Location: { schema: { type: 'string' } } } }, ...adminRefusals },
      }),
    },
    '/admin/inspector/': {
      get: operation({ operationId: 'inspectorPage', tag: 'inspector', summary: 'The inspector page', description: "The page; it loads `api/summary` relative to itself (the one path with a trailing slash).", security: adminSecurity, responses: { 200: html('The page'), ...adminRefusals } }),
    },
    '/admin/inspector/api/summary': {
      get: operation({
        operationId: 'inspectorSummary',
        tag: 'inspector',
        summary: "The inspector's data",
        description: "The last week's versions, the shadow and its diff from current, current's scores, the rollout in force, the next build, the V2 vs legacy readout (D7), the ramp and the held version (R23), the audit trail (D6).",
        security: adminSecurity,
        responses: { 200: ok(ref('InspectorSummary')), ...adminRefusals },
      }),
    },
    ...Object.fromEntries(
      (['promote', 'dismiss'] as const).map((decision) => [
        `/admin/inspector/api/held/{version}/${decision}`,
        {
          post: operation({
            operationId: `${decision}Held`,
            tag: 'inspector',
            summary: decision === 'promote' ? 'Promote the held version' : 'Dismiss the hold of a day older than current',
            description:
              decision === 'promote'
                ? 'Publishes the version the release gate held (R23) and makes it current; a day older than current stays published, not current. Clears the hold (feed_version_held); audited (D6). Refused, nothing changed, when it cannot.'
                : 'Clears the hold of a day older than current (feed_version_held) and publishes nothing; audited (D6). Refused, nothing changed, for the due day.',
            security: adminSecurity,
            parameters: [{ name: 'version', in: 'path', required: true, description: 'YYYYMMDD', schema: { type: 'string', pattern: VERSION_PATTERN.source } }],
            responses: {
              200: ok(ref('Promoted')),
              400: error('The version is not YYYYMMDD'),
              404: { description: 'That version is not the held one (`not_held`)', ...json(ref('Error')) },
              409: error(decision === 'promote' ? 'A build of it runs, or its shadow keys are not the held build any more (`conflict`): build the day again' : 'It is not older than current (`conflict`): promote it'),
              ...adminRefusals,
            },
          }),
        },
      ]),
    ),
  }, () => '', slowClient),
};
