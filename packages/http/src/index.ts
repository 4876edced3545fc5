/** HTTP pieces both deployables share: the one error shape and handler, and admin Basic auth. */
export * from './errors';
export * from './basic-auth';
