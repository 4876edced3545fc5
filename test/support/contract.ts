/**
 * supertest, with every response checked against the OpenAPI document the app itself serves at
 * /openapi.json (issue 34: a drift between a deployable and its document fails the test that
 * saw it). `request(app)` is a drop-in for supertest's: a response whose path, method, status,
 * media type or JSON body the document does not describe fails the request as an `.expect()`
 * would, naming what differs.
 */
import { METHODS } from 'node:http';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import supertest, { type Response, type Test } from 'supertest';

type App = Parameters<typeof supertest>[0];
type JsonSchema = Record<string, unknown>;

interface DocumentedResponse {
  description: string;
  content?: Record<string, { schema?: JsonSchema }>;
  headers?: Record<string, { required?: boolean }>;
}
type DocumentedOperation = { responses: Record<string, DocumentedResponse>; security?: object[] };
export interface OpenApiDocument {
  paths: Record<string, Record<string, DocumentedOperation>>;
  components?: Record<string, unknown>;
  security?: object[];
  /** Path prefixes another component answers (the worker's bull-board): not this document's to describe. */
  'x-unspecified-paths'?: Array<{ prefix: string; description: string }>;
}

/** Statuses an undocumented path may answer: the not-found route, and credentials asked first on an admin prefix. */
const UNKNOWN_PATH_STATUSES = new Set([401, 404]);

/** Checks responses against one document: what is wrong with a response, or null. */
export class Contract {
  private readonly ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  private readonly validators = new Map<string, ValidateFunction>();
  /** Literal paths before templated ones, so `/a/b` is not taken for `/a/{id}`. */
  private readonly templates: Array<{ path: string; pattern: RegExp }>;

  constructor(private readonly document: OpenApiDocument) {
    this.ajv.addSchema({ $id: 'contract', components: document.components ?? {} });
    this.templates = Object.keys(document.paths)
      .sort((a, b) => Number(a.includes('{')) - Number(b.includes('{')))
      .map((path) => ({ path, pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`) }));
  }

  /** The documented path template `path` (no query) falls under, if any. */
  template(path: string): string | undefined {
    // As both deployables route (ROUTING): `/X` is not `/x`, nor is `/x/`.
    return this.templates.find(({ pattern }) => pattern.test(path))?.path;
  }

  /** What the document does not describe of `res`, the answer to `method` on `path` (no query), or null. */
  problem(method: string, path: string, res: Pick<Response, 'status' | 'headers' | 'body'>): string | null {
    const at = `${method} ${path} answered ${res.status}`;
    const template = this.template(path);
    if (!template) {
      if (this.document['x-unspecified-paths']?.some(({ prefix }) => path === prefix || path.startsWith(`${prefix}/`))) return null;
      return UNKNOWN_PATH_STATUSES.has(res.status) ? null : `${at}, but the document has no such path`;
    }
    const operations = this.document.paths[template];
    const verb = method.toLowerCase();
    // HEAD and OPTIONS too: a method is answered as the document describes it, or with 405.
    const operation = operations[verb];
    if (!operation) {
      const allowed = res.headers.allow as string | undefined;
      const answered = res.status === 405;
      // Where every operation needs credentials, they are asked before the method is judged.
      const guarded = Object.values(operations).every((o) => (o.security ?? this.document.security ?? []).length > 0);
      if ((answered && allowed) || (guarded && res.status === 401)) return null;
      return `${at} (Allow: ${allowed ?? 'none'}); ${template} documents no ${method}, so 405 with Allow${guarded ? ' (401 without credentials)' : ''} is the only documented answer`;
    }
    const response = operation.responses[String(res.status)] ?? operation.responses.default;
    if (!response) return `${at}, which ${template} does not document for ${method} (documented: ${Object.keys(operation.responses).join(', ')})`;
    const missing = Object.entries(response.headers ?? {}).find(([name, header]) => header.required && res.headers[name.toLowerCase()] === undefined);
    if (missing) return `${at} without its documented header ${missing[0]}`;
    const mediaType = String(res.headers['content-type'] ?? '').split(';')[0].trim();
    if (verb === 'head') return null;
    if (!response.content) return mediaType === 'application/json' ? `${at} with a JSON body, where the document gives that answer none` : null;
    const media = response.content[mediaType];
    if (!media) return `${at} with content type "${mediaType}"; documented: ${Object.keys(response.content).join(', ')}`;
    if (!media.schema || mediaType !== 'application/json') return null;
    const validate = this.validator(`${template} ${verb} ${res.status}`, media.schema);
    return validate(res.body) ? null : `${at}, a body the document does not describe: ${this.ajv.errorsText(validate.errors)} in ${JSON.stringify(res.body).slice(0, 2_000)}`;
  }

  private validator(key: string, schema: JsonSchema): ValidateFunction {
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"contract#/components/')) as JsonSchema);
      this.validators.set(key, validate);
    }
    return validate;
  }
}

/** The document the process at `origin` serves, read once it answers (a failed read is tried again). */
const originContracts = new Map<string, Promise<Contract>>();
function contractAt(origin: string): Promise<Contract> {
  let contract = originContracts.get(origin);
  if (!contract) {
    contract = fetch(`${origin}/openapi.json`).then(async (res) => {
      if (res.status !== 200) throw new Error(`${origin} serves no OpenAPI document at /openapi.json (${res.status})`);
      return new Contract((await res.json()) as OpenApiDocument);
    });
    originContracts.set(origin, contract);
    contract.catch(() => originContracts.delete(origin));
  }
  return contract;
}

/** What the document served at `url`'s origin does not describe of a fetch answer, or null. */
export async function fetchAnswerProblem(method: string, url: string, res: globalThis.Response): Promise<string | null> {
  const { origin, pathname } = new URL(url);
  const text = await res.clone().text();
  const body: unknown = text && res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : text;
  return (await contractAt(origin)).problem(method, pathname, { status: res.status, headers: Object.fromEntries(res.headers), body });
}

/**
 * fetch for the process tests: each answer checked against the document the process at its
 * origin serves, rejected (naming the drift) when the document does not describe it. A process
 * that does not answer at all rejects as fetch does.
 */
export async function contractFetch(url: string, init?: RequestInit): Promise<globalThis.Response> {
  const res = await fetch(url, init);
  const problem = await fetchAnswerProblem(init?.method ?? 'GET', url, res);
  if (problem) throw new Error(problem);
  return res;
}

/** The document each app serves, read once per app (a test builds its app anew: a WeakMap drops it after). */
const contracts = new WeakMap<object, Promise<Contract>>();
const urlContracts = new Map<string, Promise<Contract>>();

async function fetchContract(app: App): Promise<Contract> {
  const res = await supertest(app).get('/openapi.json');
  if (res.status !== 200) throw new Error(`the app under test serves no OpenAPI document at /openapi.json (${res.status})`);
  return new Contract(res.body as OpenApiDocument);
}

function contractOf(app: App): Promise<Contract> {
  if (typeof app === 'string') {
    if (!urlContracts.has(app)) urlContracts.set(app, fetchContract(app));
    return urlContracts.get(app)!;
  }
  if (!contracts.has(app)) contracts.set(app, fetchContract(app));
  return contracts.get(app)!;
}

/** `test`, whose response is checked against `app`'s document before its callback (or promise) sees it. */
function checked(app: App, test: Test): Test {
  // Where the request was made: a drift is reported there, not inside this file.
  const origin = new Error('the request');
  const failure = (message: string) => Object.assign(new Error(message), { stack: `Error: ${message}\n${origin.stack!.split('\n').slice(3).join('\n')}` });
  const end = test.end.bind(test);
  test.end = (callback) =>
    end((err: Error | null, res: Response) => {
      const done = callback ?? (() => undefined);
      if (!res) return done(err, res);
      // supertest's request URL is absolute (its own server's address, or the URL under test).
      const { method, url } = res.request;
      contractOf(app)
        .then((contract) => contract.problem(method, new URL(url).pathname, res))
        .then(
          (problem) => done(problem ? failure(err ? `${err.message}; and ${problem}` : problem) : err, res),
          (unreadable: Error) => done(unreadable, res),
        );
    });
  return test;
}

const HTTP_METHODS = new Set(METHODS.map((m) => m.toLowerCase()));

const injectedFaults = new WeakSet<object>();

/**
 * `app`, marked as one whose bugs a test injects on purpose (a simulated crash answers 500, which
 * no document describes, nor should): `request` leaves its answers unchecked.
 */
export function withInjectedFaults<T extends object>(app: T): T {
  injectedFaults.add(app);
  return app;
}

/** supertest's `request(app)`, every response checked against the document `app` serves. */
export default function request(app: App): ReturnType<typeof supertest> {
  if (typeof app !== 'string' && injectedFaults.has(app)) return supertest(app);
  // Read beside the first request rather than after it: a test timing its own requests is not slowed.
  void contractOf(app).catch(() => undefined);
  const agent = supertest(app);
  return new Proxy(agent, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || !HTTP_METHODS.has(property) || typeof value !== 'function') return value;
      return (...args: unknown[]) => checked(app, (value as (...a: unknown[]) => Test).apply(target, args));
    },
  });
}

export type { Response, Test } from 'supertest';
