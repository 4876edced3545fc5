/**
 * The contract check every API and worker test runs through (./contract): what it lets pass and
 * what it reports, over the API's real document, with no server (each case a drift it must see).
 */
import { openApiDocument } from '@feed/api';
import { Contract, type OpenApiDocument } from './contract';

const contract = new Contract(JSON.parse(JSON.stringify(openApiDocument)) as OpenApiDocument);
const json = { 'content-type': 'application/json; charset=utf-8' };
const video = { vid: '0123456789abcdef01234567', title: 't', coverUrl: 'c', playUrl: 'p', durationSec: 9, authorId: 'a', vip: false, coin: false, isAd: false, special: false, likeCount: 0, collectCount: 0, commentCount: 0, shareCount: 0, reviewAt: null };
const page = { vInfos: [video], totalPages: 1, hasNext: true, queueVersion: '20260724' };
const answer = (status: number, body: unknown, headers: Record<string, string> = json) => ({ status, headers, body });

describe('the contract check', () => {
  it('when a response is the documented one, then it passes (templated paths, HEAD and OPTIONS, 405 with Allow)', () => {
    expect(contract.problem('GET', '/api/app/recommend/vid/list', answer(200, page))).toBeNull();
    expect(contract.problem('OPTIONS', '/healthz', answer(204, '', { allow: 'GET, HEAD' }))).toBeNull();
    expect(contract.problem('DELETE', '/api/app/vid/comment/0123456789abcdef01234567', answer(401, { error: { code: 'unauthorized', message: 'm' } }))).toBeNull();
    expect(contract.problem('HEAD', '/healthz', answer(200, {}))).toBeNull();
    expect(contract.problem('PATCH', '/healthz', answer(405, { error: { code: 'method_not_allowed', message: 'm' } }, { ...json, allow: 'GET, HEAD' }))).toBeNull();
    expect(contract.problem('GET', '/no/such/path', answer(404, { error: { code: 'not_found', message: 'm' } }))).toBeNull();
  });

  it('when a body, status, media type, method or path drifts from the document, then the check names it', () => {
    expect(contract.problem('GET', '/api/app/recommend/vid/list', answer(200, { ...page, vInfos: [{ ...video, extra: 1 }] }))).toMatch(/vInfos\/0 must NOT have additional properties/);
    expect(contract.problem('GET', '/api/app/recommend/vid/list', answer(200, { ...page, hasNext: 'yes' }))).toMatch(/hasNext must be boolean/);
    expect(contract.problem('GET', '/api/app/recommend/vid/list', answer(418, {}))).toMatch(/answered 418, which .* does not document/);
    expect(contract.problem('GET', '/api/app/recommend/vid/list', answer(200, 'page', { 'content-type': 'text/html' }))).toMatch(/content type "text\/html"/);
    expect(contract.problem('PATCH', '/healthz', answer(200, {}))).toMatch(/documents no PATCH/);
    expect(contract.problem('PATCH', '/healthz', answer(405, {}))).toMatch(/Allow: none/);
    expect(contract.problem('GET', '/no/such/path', answer(200, {}))).toMatch(/no such path/);
  });

  it('when a path in another case or with a trailing slash is answered as its route, then the check names it (routing is strict and case-sensitive)', () => {
    expect(contract.problem('GET', '/api/app/recommend/vid/list/', answer(200, page))).toMatch(/no such path/);
    expect(contract.problem('GET', '/HEALTHZ', answer(200, { status: 'ok' }))).toMatch(/no such path/);
    expect(contract.problem('GET', '/API/ADMIN/ROLLOUT', answer(404, { error: { code: 'not_found', message: 'm' } }))).toBeNull();
  });

  it('when a bug answers 500, or OPTIONS answers without Allow, or HEAD with a status its GET does not have, then the check names it', () => {
    const internal = { error: { code: 'internal', message: 'internal server error' } };
    for (const [path, ops] of Object.entries(openApiDocument.paths)) {
      for (const verb of Object.keys(ops)) expect(contract.problem(verb.toUpperCase(), path.replace(/\{\w+\}/g, '0123456789abcdef01234567'), answer(500, internal))).toMatch(/answered 500, which .* does not document/);
    }
    expect(contract.problem('OPTIONS', '/api/app/vid/like', answer(204, '', {}))).toMatch(/without its documented header Allow/);
    expect(contract.problem('OPTIONS', '/api/app/vid/like', answer(200, 'POST', { 'content-type': 'text/plain', allow: 'POST' }))).toMatch(/answered 200, which/);
    expect(contract.problem('HEAD', '/healthz', answer(503, ''))).toMatch(/answered 503, which/);
  });

  it('when an error body carries more than code and message (a stack, a store error) or an odd code, or a JSON body comes where none is documented, then the check names it', () => {
    const unauthorized = { error: { code: 'unauthorized', message: 'm' } };
    expect(contract.problem('GET', '/api/app/recommend/vid/list', answer(401, { error: { ...unauthorized.error, stack: 'at x' } }))).toMatch(/error must NOT have additional properties/);
    expect(contract.problem('GET', '/api/app/recommend/vid/list', answer(401, { ...unauthorized, detail: 1 }))).toMatch(/must NOT have additional properties/);
    expect(contract.problem('GET', '/api/app/recommend/vid/list', answer(401, { error: { code: 'Not Found!', message: 'm' } }))).toMatch(/code must match pattern/);
    const noContent = Object.entries(openApiDocument.paths).flatMap(([path, ops]) =>
      Object.entries(ops as Record<string, { responses: Record<string, { content?: unknown }> }>).flatMap(([verb, op]) => Object.entries(op.responses).filter(([, r]) => !r.content).map(([status]) => ({ path, verb, status: Number(status) }))),
    )[0];
    expect(noContent).toBeDefined();
    expect(contract.problem(noContent.verb.toUpperCase(), noContent.path.replace(/\{\w+\}/g, '0123456789abcdef01234567'), answer(noContent.status, { sneaked: true }))).toMatch(/JSON body, where the document gives that answer none/);
  });
});
