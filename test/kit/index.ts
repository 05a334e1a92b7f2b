export * from './contract';
export * from './factories';
export * from './snapshot';
export * from './test-app';
export * from './test-database';
export * from './links';
export * from './tcp-proxy';
export * from './eventually';
