export * from './eligibility';
export * from './score';
export * from './pools';
export * from './shuffle';
export * from './assemble';
export * from './version';
export * from './hash';
export * from './offset-buckets';
