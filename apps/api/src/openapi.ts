/**
 * OpenAPI 3.1 description of the API, served at /openapi.json. Parameters and bodies come from the
 * routes' joi schemas (joi-to-json); response shapes are declared here, checked against real
 * responses and `redocly lint` in tests.
 */
import type Joi from 'joi';
import parse from 'joi-to-json';
import { ADMIN_BASIC_SCHEME, ERROR_BODY_SCHEMA, error, json, methodsOnEveryPath, ok, operationsPaths, readinessSchema, ref, slowClient, typed, type OperationFields } from '@feed/http';
import { MAX_DWELL_MS, MAX_RAMP_STEPS, MIN_DWELL_MS } from '@feed/domain';
import { AUDIT_ACTIONS } from '@feed/storage';
import { objectId, vidBody } from './http/validate';
import { adQuery, countQuery, pageQuery } from './routes/feed-routes';
import { commentBody, idempotencyKey, shareBody } from './routes/interaction-routes';
import { auditQuery, explainQuery, rampBody, rolloutBody } from './routes/admin-routes';

type JsonSchema = Record<string, unknown>;

const toJsonSchema = (schema: Joi.Schema): JsonSchema => parse(schema, 'open-api-3.1') as JsonSchema;

/** The query parameters of a joi object schema, one per key. */
function queryParameters(schema: Joi.ObjectSchema): object[] {
  const { properties = {}, required = [] } = toJsonSchema(schema) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(properties).map(([name, { description, ...property }]) => ({ name, in: 'query', required: required.includes(name), schema: property, ...(description ? { description } : {}) }));
}

/** A query whose parameters exclude each other (joi's xor): one exploded object, so that its schema can say so (oneOf). */
function exclusiveQuery(schema: Joi.ObjectSchema): object[] {
  const { if: _if, then: _then, else: exclusive, ...query } = toJsonSchema(schema);
  return [{ name: 'query', in: 'query', required: true, style: 'form', explode: true, schema: { ...query, ...(exclusive as JsonSchema) } }];
}

const body = (schema: Joi.Schema, required = true) => ({ required, ...json(toJsonSchema(schema)) });
/** Answered wherever a body is read (app.ts: only where the document takes one, only as JSON up to 16 KB). */
const bodyRefusals = {
  413: error('Request body larger than 16 KB (payload_too_large)'),
  415: error('A body that is not application/json, or JSON in a charset other than UTF-8 (unsupported_media_type)'),
};

const clientErrors = { 400: error('Malformed input, naming the field'), 401: error('Missing or invalid credentials') };
const withVideo = { ...clientErrors, 404: error('No such video') };
const unavailable = { 503: error('A store it needs is unreachable') };
/** A page's 503 (R17): what the instance holds is served, anything else is answered within the budgets. */
const pageUnavailable = {
  503: error('No page can be served: MongoDB did not answer the video look-ups within MONGO_DEADLINE_MS (a frozen or unreachable MongoDB; documents the instance holds are still served), or every strategy failed. No ring position is consumed: retry.'),
};
/** A guest naming a device id with no record yet, past its address's budget (http/new-device-limit.ts, R23). */
const newDeviceRefusal = {
  429: {
    ...error('A guest device id the service has no record of, after NEW_DEVICES_PER_ADDRESS new ones from this client address within NEW_DEVICES_WINDOW_S (too_many_new_devices); known devices and signed-in users never get it'),
    headers: { 'Retry-After': { description: 'Seconds until the address may start another device', schema: { type: 'integer', minimum: 1 } } },
  },
};
const userSecurity = [{ bearer: [] }];
const userOrGuest = [{ bearer: [] }, { deviceId: [] }];
const adminSecurity = [{ adminBasic: [] }];

type Operation = OperationFields<'feed' | 'views' | 'interactions' | 'admin' | 'operations'>;

/** Every route but probes, metrics and this document reads a store (503); no 500: a bug's answer is contract drift. */
const operation = ({ tag, responses, ...fields }: Operation) => ({
  tags: [tag],
  ...fields,
  responses: { ...(tag === 'operations' ? {} : unavailable), ...responses, ...(fields.requestBody ? bodyRefusals : {}), ...(fields.security === userOrGuest ? newDeviceRefusal : {}) },
});

const feedPage = (operationId: string, summary: string, description: string) => ({
  get: operation({ operationId, tag: 'feed', summary, description, security: userOrGuest, parameters: queryParameters(pageQuery), responses: { 200: ok(ref('FeedPage')), ...clientErrors, ...pageUnavailable } }),
});

const toggle = (operationId: string, summary: string, description: string) => ({
  post: operation({ operationId, tag: 'interactions', summary, description, security: userSecurity, requestBody: body(vidBody), responses: { 200: ok(ref('Toggle')), ...withVideo, 409: error('The video is not an approved short video') } }),
});

const viewAction = (operationId: string, summary: string, description: string) => ({
  post: operation({ operationId, tag: 'views', summary, description, security: userOrGuest, requestBody: body(vidBody), responses: { 200: ok(ref('Ok')), ...withVideo, ...unavailable } }),
});

const CORS_PREFLIGHT =
  ' On /api/app paths, a CORS preflight from an origin in CORS_ALLOWED_ORIGINS also gets the Access-Control-Allow-* headers (methods GET, POST, DELETE; headers Authorization, X-Device-Id, Idempotency-Key, Content-Type; max age 600 s); other origins get no Access-Control-Allow-Origin.';

const rolloutAnswer = ok(ref('RolloutInForce'), 'The rollout in force after the call, and where each value comes from');
const rampAnswer = ok(ref('Ramp'), 'The ramp as stored after the call');
const rampRefusals = { 401: error('Missing or invalid admin credentials'), 404: error('No ramp is stored'), 409: error('The ramp is not in a state that allows it (e.g. resume of a running ramp, pause of a halted one, or the kill switch is on)') };

export const openApiDocument = {
  openapi: '3.1.0',
  info: { title: 'Short-video feed API', version: '2.0.0', description: 'Feed reads and interactions for the H5 client, and the admin endpoints on-call uses (explain, the rollout switch).' },
  // Relative: every deployment serves this document at /openapi.json on its own host.
  servers: [{ url: '/', description: 'The host that served this document' }],
  tags: [
    { name: 'feed', description: 'The next videos for a user (R11-R13)' },
    { name: 'views', description: 'Views, free watches and "not interested" (R14, R15, V1, V3)' },
    { name: 'interactions', description: 'Likes, collects, comments and shares (R2-R4)' },
    { name: 'admin', description: 'On-call: behind the admin credentials (HTTP Basic, ADMIN_USER / ADMIN_PASSWORD)' },
    { name: 'operations', description: 'Probes, metrics, this document and the CORS preflight: no credentials' },
  ],
  components: {
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (HS256, sub = user id)', description: 'Authorization: Bearer <JWT>; the scheme name in any case (RFC 7235)' },
      deviceId: { type: 'apiKey', in: 'header', name: 'X-Device-Id' },
      adminBasic: ADMIN_BASIC_SCHEME,
    },
    schemas: {
      Error: ERROR_BODY_SCHEMA,
      VideoInfo: {
        type: 'object',
        description: 'One video as the H5 client shows it (the item of vInfos)',
        additionalProperties: false,
        required: ['vid', 'title', 'coverUrl', 'playUrl', 'durationSec', 'authorId', 'vip', 'coin', 'isAd', 'special', 'likeCount', 'collectCount', 'commentCount', 'shareCount', 'reviewAt'],
        properties: {
          vid: toJsonSchema(objectId),
          ...typed({ type: 'string' }, 'title', 'coverUrl', 'playUrl', 'authorId'),
          durationSec: { type: 'number' },
          ...typed({ type: 'boolean' }, 'vip', 'coin', 'isAd', 'special'),
          ...typed({ type: 'number', description: 'real + fake, as shown' }, 'likeCount', 'commentCount', 'shareCount'),
          collectCount: { type: 'number' },
          reviewAt: { type: ['string', 'null'], format: 'date-time' },
        },
      },
      FeedPage: {
        type: 'object',
        additionalProperties: false,
        required: ['vInfos', 'totalPages', 'hasNext', 'queueVersion'],
        properties: {
          vInfos: { type: 'array', items: ref('VideoInfo') },
          totalPages: { type: 'integer', description: 'ceil(queueLength / 20), for old clients' },
          hasNext: { type: 'boolean', description: 'true whenever the ring is non-empty' },
          queueVersion: { type: 'string', description: 'YYYYMMDD, or "legacy" / "fallback" when degraded; for logs' },
          allSeen: { type: 'boolean', description: 'present (true) when a whole circle held nothing new for this user' },
        },
      },
      WatchCount: { type: 'object', additionalProperties: false, required: ['watchCount', 'totalWatchCount'], properties: typed({ type: 'integer', minimum: 0 }, 'watchCount', 'totalWatchCount') },
      Toggle: { type: 'object', additionalProperties: false, required: ['active', 'changed'], properties: { active: { type: 'boolean' }, changed: { type: 'boolean' } } },
      Ok: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' }, removed: { type: 'boolean' }, counted: { type: 'boolean' } } },
      Comment: { type: 'object', required: ['commentId', 'created'], properties: { commentId: toJsonSchema(objectId), created: { type: 'boolean' } } },
      Explanation: {
        type: 'object',
        required: ['user', 'version', 'queueLength', 'offset', 'generatedAt', 'candidates'],
        properties: {
          ...typed({ type: 'string' }, 'user', 'version'),
          ...typed({ type: 'integer' }, 'queueLength', 'offset'),
          generatedAt: { type: ['string', 'null'] },
          candidates: { type: 'array', items: { type: 'object', description: 'position, block, pool, score and verdict of one candidate' } },
        },
      },
      Readiness: readinessSchema(
        ['ready', 'degraded', 'unavailable', 'warming', 'draining'],
        'degraded: Redis is down and the feed serves its MongoDB fallback; warming: a new instance is loading its copy of the current queue; draining: the instance got SIGTERM (D4)',
      ),
      RolloutInForce: {
        type: 'object',
        required: ['enabled', 'percent', 'source', 'environment'],
        properties: {
          enabled: { type: 'boolean' },
          percent: { type: 'integer', minimum: 0, maximum: 100 },
          source: { type: 'object', description: 'override or environment, per value' },
          environment: { type: 'object', description: 'the values the environment sets' },
        },
      },
      Ramp: {
        type: 'object',
        description: "The rollout ramp's stored state (R23, schema 1; documented in packages/domain/src/ramp.ts)",
        required: ['schema', 'id', 'status', 'steps', 'current', 'dwellMs', 'revision'],
        properties: {
          schema: { const: 1 },
          id: { type: 'string' },
          requestedBy: { type: 'string' },
          status: { type: 'string', enum: ['running', 'waiting', 'halted', 'done', 'paused'] },
          revision: { type: 'integer', minimum: 1 },
          dwellMs: { type: 'integer', minimum: MIN_DWELL_MS, maximum: MAX_DWELL_MS },
          recheckMs: { type: 'integer', minimum: MIN_DWELL_MS, maximum: MAX_DWELL_MS },
          current: { type: 'integer', minimum: 0, maximum: MAX_RAMP_STEPS - 1, description: 'index of the step in force' },
          lastGoodPercent: { type: 'integer', minimum: 0, maximum: 100, description: 'where a halt puts the percent back' },
          judgeAt: { type: ['string', 'null'], format: 'date-time' },
          haltReasons: { type: 'array', items: { type: 'string' } },
          pause: { type: ['object', 'null'], description: 'cause (manual-percent, kill-switch, manual-pause, sample-ratio: the arms\' units off the split, resumed only by on-call), at, by, detail' },
          guards: { type: 'object', description: 'confidence, minViews, minRequests, margins per operational guard, engagement guards' },
          steps: {
            type: 'array',
            items: {
              type: 'object',
              required: ['percent', 'outcome'],
              properties: {
                percent: { type: 'integer', minimum: 1, maximum: 100 },
                outcome: { type: 'string', enum: ['pending', 'running', 'waiting', 'passed', 'failed', 'reached'] },
                startedAt: { type: ['string', 'null'], format: 'date-time' },
                judgements: { type: 'integer', minimum: 0 },
                verdict: {
                  type: ['object', 'null'],
                  description:
                    'outcome (pass, fail, mismatch, wait), reasons, and per guard: sample sizes, rates, confidence intervals, the difference and its interval, over trusted units (signed-in users, devices first seen before the step); sampleRatio (units per arm, the ring share asked, chi-square, p, mismatch); fresh (new devices\' views and not-interested, not judged)',
                },
              },
            },
          },
        },
      },
    },
  },
  paths: methodsOnEveryPath({
    ...operationsPaths({
      liveness: 'The process answers.',
      readiness: 'Ready while MongoDB answers (it fails readiness once it failed every probe for 3 s); Redis down is degraded, still ready (R17). 503 while warming (a new instance) and draining (from SIGTERM on, D4).',
      notReady: 'MongoDB does not answer, or the instance is warming or draining',
      metrics: 'The R18 metrics in the Prometheus text format.',
      document: 'The OpenAPI 3.1 document of this API.',
    }),
    '/api/app/recommend/vid/list': feedPage('nextPage', 'Next page of the feed', 'The H5 main call: the next videos of the ring queue for this user or device, skipping seen and rejected ones.'),
    '/api/app/vid/module/short/all': feedPage('nextPageOldClient', 'Next page of the feed (older client)', 'The older client\'s endpoint: the same ring service, the same offset.'),
    '/api/app/recommend/vid/ad': {
      get: operation({
        operationId: 'adVideos',
        tag: 'feed',
        summary: 'Ad videos',
        description: 'Ad videos the client inserts outside the 17+3 blocks.',
        security: userOrGuest,
        parameters: queryParameters(adQuery),
        responses: { 200: ok({ type: 'object', required: ['vInfos'], properties: { vInfos: { type: 'array', items: ref('VideoInfo') } } }), ...clientErrors },
      }),
    },
    '/api/app/vid/user/count': {
      get: operation({
        operationId: 'watchCount',
        tag: 'views',
        summary: 'Remaining free watches',
        description: 'Remaining free watches today; with vid, registers that watch (once per user, video and day) and a view.',
        security: userOrGuest,
        parameters: queryParameters(countQuery),
        responses: { 200: ok(ref('WatchCount')), ...withVideo, ...unavailable },
      }),
    },
    '/api/app/vid/view': viewAction('recordView', 'Record a view', 'The feed skips this video for VIEW_HISTORY_TTL_DAYS.'),
    '/api/app/recommend/vid/not-interested': viewAction('markNotInterested', 'Not interested', 'The feed never shows this video to this user again (until undone).'),
    '/api/app/recommend/vid/not-interested/undo': viewAction('undoNotInterested', 'Undo "not interested"', 'Removes the mark; `removed` says whether there was one.'),
    '/api/app/vid/like': toggle('like', 'Like', 'Counts once per user and video in its lifetime (recommend*); the display count follows the like.'),
    '/api/app/vid/unlike': toggle('unlike', 'Unlike', 'Lowers the display count only.'),
    '/api/app/vid/collect': toggle('collect', 'Collect', 'Counts once per user and video (recommend*); the display count follows.'),
    '/api/app/vid/uncollect': toggle('uncollect', 'Uncollect', 'Lowers the display count only.'),
    '/api/app/vid/comment': {
      post: operation({
        operationId: 'comment',
        tag: 'interactions',
        summary: 'Publish a comment',
        description: 'An Idempotency-Key header makes a retried request return the first comment and count it once.',
        security: userSecurity,
        parameters: [{ name: 'Idempotency-Key', in: 'header', required: false, schema: toJsonSchema(idempotencyKey) }],
        requestBody: body(commentBody),
        responses: { 201: ok(ref('Comment'), 'Created'), 200: ok(ref('Comment'), 'Replayed: the comment this key created'), ...withVideo, 409: error('The video is not an approved short video, or the key was used for another video') },
      }),
    },
    '/api/app/vid/comment/{id}': {
      delete: operation({
        operationId: 'deleteComment',
        tag: 'interactions',
        summary: 'Delete my comment',
        description: 'Lowers the display count only; another user\'s comment is reported as missing.',
        security: userSecurity,
        parameters: [{ name: 'id', in: 'path', required: true, schema: toJsonSchema(objectId) }],
        responses: { 200: ok({ type: 'object', required: ['deleted'], properties: { deleted: { type: 'boolean' } } }), ...clientErrors, 404: error('No such comment of this user') },
      }),
    },
    '/api/app/share/output': {
      post: operation({
        operationId: 'share',
        tag: 'interactions',
        summary: 'Share',
        description: 'Counted once per user and video when videoID names an approved short video; guests are never counted.',
        security: userOrGuest,
        requestBody: body(shareBody, false),
        responses: { 200: ok(ref('Ok')), ...withVideo },
      }),
    },
    '/api/admin/explain': {
      get: operation({
        operationId: 'explainNextPage',
        tag: 'admin',
        summary: "Explain a user's next page",
        description: 'Read-only: the offset and the next candidates with block, pool, score and skip reason. Exactly one of `user` and `device` names whom to explain: neither or both is 400.',
        security: adminSecurity,
        parameters: exclusiveQuery(explainQuery),
        responses: { 200: ok(ref('Explanation')), 400: error('Not exactly one of user and device, or a malformed value'), 401: clientErrors[401], 404: error('No current version, or no queue for it') },
      }),
    },
    '/api/admin/rollout': {
      get: operation({ operationId: 'getRollout', tag: 'admin', summary: 'The rollout in force', description: 'The values in force and where each comes from (override or environment).', security: adminSecurity, responses: { 200: rolloutAnswer, 401: error('Missing or invalid admin credentials') } }),
      put: operation({
        operationId: 'setRollout',
        tag: 'admin',
        summary: 'Override the rollout',
        description: 'Every API instance applies the override within CURRENT_CACHE_MS (R16).',
        security: adminSecurity,
        requestBody: body(rolloutBody),
        responses: { 200: rolloutAnswer, ...clientErrors, 409: error('Other admin commands changed the ramp under every attempt (`conflict`): nothing was written, try again') },
      }),
      delete: operation({ operationId: 'clearRollout', tag: 'admin', summary: 'Clear the override', description: 'The environment\'s values rule again.', security: adminSecurity, responses: { 200: rolloutAnswer, 401: error('Missing or invalid admin credentials'), 409: error('Other admin commands changed the ramp under every attempt (`conflict`): nothing was written, try again') } }),
    },
    '/api/admin/rollout/ramp': {
      get: operation({ operationId: 'getRamp', tag: 'admin', summary: 'The rollout ramp', description: "The stored ramp (R23): its steps with each verdict (sample sizes, rates and confidence intervals per guard), the current step, its status and pause or halt reasons.", security: adminSecurity, responses: { 200: rampAnswer, 401: rampRefusals[401], 404: rampRefusals[404] } }),
      put: operation({
        operationId: 'startRamp',
        tag: 'admin',
        summary: 'Start a rollout ramp',
        description:
          "Stores a ramp (R23) and sets its first step's percent (and enabled) in the same atomic step; the worker holding the controller's lease then drives it: it judges each step after its dwell from the V2 vs legacy readout (D7) and moves on, waits when samples are too few, or halts and puts the percent back to the last good step. A manual PUT or DELETE of /api/admin/rollout pauses it. Refused (409) while another ramp runs or the kill switch is on; any value out of its range (steps 1-100 strictly increasing, at most 20; dwell and recheck from 1m to 30d; confidence 0.5-0.999; minViews and minRequests 1-100000000) is a 400 naming it, and nothing is stored.",
        security: adminSecurity,
        requestBody: body(rampBody),
        responses: { 200: rampAnswer, ...clientErrors, 409: rampRefusals[409] },
      }),
    },
    '/api/admin/rollout/ramp/pause': {
      post: operation({ operationId: 'pauseRamp', tag: 'admin', summary: 'Pause the rollout ramp', description: 'The ramp stops where it is: it writes nothing more until resumed. The percent in force stays.', security: adminSecurity, responses: { 200: rampAnswer, ...rampRefusals } }),
    },
    '/api/admin/rollout/ramp/resume': {
      post: operation({ operationId: 'resumeRamp', tag: 'admin', summary: 'Resume a paused ramp', description: 'The step it paused at starts again with a fresh dwell and readout, once the worker has set its percent (and enabled) at its next check. Refused while the kill switch is on.', security: adminSecurity, responses: { 200: rampAnswer, ...rampRefusals } }),
    },
    '/api/admin/audit': {
      get: operation({
        operationId: 'auditTrail',
        tag: 'admin',
        summary: "On-call's audit trail",
        description: 'Rollout changes and builds requested by hand (D6), newest first: who, when, the values before and after.',
        security: adminSecurity,
        parameters: queryParameters(auditQuery),
        responses: {
          200: ok({
            type: 'object',
            required: ['entries'],
            properties: {
              entries: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['id', 'at', 'action', 'actor', 'via', 'before', 'after'],
                  properties: {
                    id: { type: 'string', description: 'Redis stream id' },
                    at: { type: 'string', format: 'date-time' },
                    action: { type: 'string', enum: [...AUDIT_ACTIONS] },
                    actor: { type: 'string', description: "The admin user, user@host for the CLI, or `ramp <id>` for a ramp's own steps and writes" },
                    via: { type: 'string', enum: ['api', 'cli', 'dashboard', 'worker'] },
                    before: {},
                    after: {},
                  },
                },
              },
            },
          }),
          ...clientErrors,
        },
      }),
    },
  }, (path) => (path.startsWith('/api/app/') ? CORS_PREFLIGHT : ''), slowClient),
};

type DocumentedOperation = { security?: object[]; requestBody?: object };
const operationsWhere = (keep: (method: string, operation: DocumentedOperation) => unknown) =>
  new Set(
    Object.entries(openApiDocument.paths as Record<string, Record<string, DocumentedOperation>>).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([method, operation]) => keep(method, operation))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    ),
  );

/** `METHOD path` of the operations a guest may call: the new-device limit's (app.ts). */
export const guestOperations = operationsWhere((method, operation) => method !== 'head' && operation.security === userOrGuest);
/** `METHOD /path` of each operation that takes a body: app.ts reads a body there and nowhere else. */
export const bodyOperations = operationsWhere((_method, operation) => operation.requestBody);
