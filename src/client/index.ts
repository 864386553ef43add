// plant-store/client: the client of the plant-store-client package
// (packages/client), compiled into this package too, so that installing the
// server brings its client without a second download.
export * from '../../packages/client/src/index.js';
