export { startEmbeddedMongo, type EmbeddedMongo, type EmbeddedMongoOptions } from './server';
export { HANDLED_COMMANDS } from './commands';
