export * from './announcements.listing';
export * from './announcements.module';
export * from './announcements.table';
