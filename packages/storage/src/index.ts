export * from './redis-keys';
export * from './redis-client';
export * from './lua-scripts';
export * from './mongo';
export * from './models/video';
export * from './queue-meta';
export * from './demo-data';
export * from './fingerprint';
