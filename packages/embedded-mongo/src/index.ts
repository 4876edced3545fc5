export { startEmbeddedMongo, type EmbeddedMongo, type EmbeddedMongoOptions } from './server';
