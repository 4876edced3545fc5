/** OpenAPI 3.1 description of the app endpoints, served at /openapi.json and checked against real responses in tests. */
import { MAX_PAGE_SIZE } from './routes/feed-routes';
import { MAX_COMMENT_LENGTH } from './routes/interaction-routes';

const objectId = { type: 'string', pattern: '^[0-9a-fA-F]{24}$' };
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const ok = (schema: object, description = 'OK') => ({ description, ...json(schema) });
const errors = {
  400: { description: 'Malformed input', ...json(ref('Error')) },
  401: { description: 'Missing or invalid credentials', ...json(ref('Error')) },
};
const withVideo = { ...errors, 404: { description: 'No such video', ...json(ref('Error')) } };
const vidBody = { required: true, ...json({ type: 'object', required: ['vid'], properties: { vid: objectId } }) };
const userSecurity = [{ bearer: [] }];
const userOrGuest = [{ bearer: [] }, { deviceId: [] }];
const pageParams = [
  { name: 'pageNumber', in: 'query', schema: { type: 'integer', minimum: 1 }, description: 'Accepted for old clients; never moves the offset' },
  { name: 'pageSize', in: 'query', schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: 20 } },
];
const toggle = (summary: string) => ({
  post: { summary, security: userSecurity, requestBody: vidBody, responses: { 200: ok(ref('Toggle')), ...withVideo, 409: { description: 'Video not approved', ...json(ref('Error')) } } },
});

export const openApiDocument = {
  openapi: '3.1.0',
  info: { title: 'Short-video feed API', version: '2.0.0', description: 'Feed reads and interactions for the H5 client.' },
  components: {
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (HS256, sub = user id)' },
      deviceId: { type: 'apiKey', in: 'header', name: 'X-Device-Id' },
    },
    schemas: {
      Error: {
        type: 'object',
        required: ['error'],
        properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } } },
      },
      VideoInfo: {
        type: 'object',
        additionalProperties: false,
        required: ['vid', 'title', 'coverUrl', 'playUrl', 'durationSec', 'authorId', 'vip', 'coin', 'isAd', 'special', 'likeCount', 'collectCount', 'commentCount', 'shareCount', 'reviewAt'],
        properties: {
          vid: objectId,
          title: { type: 'string' },
          coverUrl: { type: 'string' },
          playUrl: { type: 'string' },
          durationSec: { type: 'number' },
          authorId: { type: 'string' },
          vip: { type: 'boolean' },
          coin: { type: 'boolean' },
          isAd: { type: 'boolean' },
          special: { type: 'boolean' },
          likeCount: { type: 'number', description: 'real + fake, as shown' },
          collectCount: { type: 'number' },
          commentCount: { type: 'number', description: 'real + fake, as shown' },
          shareCount: { type: 'number', description: 'real + fake, as shown' },
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
      WatchCount: {
        type: 'object',
        additionalProperties: false,
        required: ['watchCount', 'totalWatchCount'],
        properties: { watchCount: { type: 'integer', minimum: 0 }, totalWatchCount: { type: 'integer', minimum: 0 } },
      },
      Toggle: { type: 'object', additionalProperties: false, required: ['active', 'changed'], properties: { active: { type: 'boolean' }, changed: { type: 'boolean' } } },
      Ok: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' }, removed: { type: 'boolean' }, counted: { type: 'boolean' } } },
    },
  },
  paths: {
    '/api/app/recommend/vid/list': { get: { summary: 'Next page of the feed (the H5 main call)', security: userOrGuest, parameters: pageParams, responses: { 200: ok(ref('FeedPage')), ...errors } } },
    '/api/app/vid/module/short/all': { get: { summary: 'Older client: same ring service', security: userOrGuest, parameters: pageParams, responses: { 200: ok(ref('FeedPage')), ...errors } } },
    '/api/app/recommend/vid/ad': {
      get: {
        summary: 'Ad videos, inserted by the client outside the 17+3',
        security: userOrGuest,
        parameters: [{ name: 'pageSize', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 10, default: 3 } }],
        responses: { 200: ok({ type: 'object', required: ['vInfos'], properties: { vInfos: { type: 'array', items: ref('VideoInfo') } } }), ...errors },
      },
    },
    '/api/app/vid/user/count': {
      get: {
        summary: 'Remaining free watches; with vid, registers that watch (once per user, video and day) and a view',
        security: userOrGuest,
        parameters: [{ name: 'vid', in: 'query', schema: objectId }],
        responses: { 200: ok(ref('WatchCount')), ...withVideo },
      },
    },
    '/api/app/vid/view': { post: { summary: 'Record a view (skipped by the feed for VIEW_HISTORY_TTL_DAYS)', security: userOrGuest, requestBody: vidBody, responses: { 200: ok(ref('Ok')), ...withVideo } } },
    '/api/app/recommend/vid/not-interested': { post: { summary: 'Never show this video to me', security: userOrGuest, requestBody: vidBody, responses: { 200: ok(ref('Ok')), ...withVideo } } },
    '/api/app/recommend/vid/not-interested/undo': { post: { summary: 'Undo "not interested"', security: userOrGuest, requestBody: vidBody, responses: { 200: ok(ref('Ok')), ...withVideo } } },
    '/api/app/vid/like': toggle('Like (counts once per user and video in its lifetime)'),
    '/api/app/vid/unlike': toggle('Unlike (display count only)'),
    '/api/app/vid/collect': toggle('Collect (counts once per user and video)'),
    '/api/app/vid/uncollect': toggle('Uncollect (display count only)'),
    '/api/app/vid/comment': {
      post: {
        summary: 'Publish a comment; an Idempotency-Key header makes retries create and count it once',
        security: userSecurity,
        parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{8,128}$' } }],
        requestBody: { required: true, ...json({ type: 'object', required: ['vid', 'content'], properties: { vid: objectId, content: { type: 'string', minLength: 1, maxLength: MAX_COMMENT_LENGTH } } }) },
        responses: {
          201: ok({ type: 'object', required: ['commentId', 'created'], properties: { commentId: objectId, created: { type: 'boolean' } } }, 'Created'),
          200: ok({ type: 'object', required: ['commentId', 'created'], properties: { commentId: objectId, created: { type: 'boolean' } } }, 'Replayed'),
          ...withVideo,
        },
      },
    },
    '/api/app/vid/comment/{id}': {
      delete: {
        summary: 'Delete my comment (display count only)',
        security: userSecurity,
        parameters: [{ name: 'id', in: 'path', required: true, schema: objectId }],
        responses: { 200: ok({ type: 'object', required: ['deleted'], properties: { deleted: { type: 'boolean' } } }), ...withVideo },
      },
    },
    '/api/app/share/output': {
      post: {
        summary: 'Share; counted once per user and video when videoID names an approved short video',
        security: userOrGuest,
        requestBody: { required: false, ...json({ type: 'object', properties: { videoID: objectId } }) },
        responses: { 200: ok(ref('Ok')), ...withVideo },
      },
    },
  },
} as const;
