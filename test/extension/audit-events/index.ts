export * from './audit-events.listing';
export * from './audit-events.module';
export * from './audit-events.table';
