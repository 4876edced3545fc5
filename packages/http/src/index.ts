/** HTTP pieces both deployables share: the one error shape and handler, admin Basic auth, and HTTP semantics (405, slow clients). */
export * from './errors';
export * from './basic-auth';
export * from './http-semantics';
export * from './openapi-parts';
export * from './request-id';
