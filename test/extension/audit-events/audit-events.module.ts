import { Module } from '@nestjs/common';
import { AuditEventsController } from './audit-events.controller';
import { AuditEventsRepository } from './audit-events.repository';

@Module({ controllers: [AuditEventsController], providers: [AuditEventsRepository] })
export class AuditEventsModule {}
