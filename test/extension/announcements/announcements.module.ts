import { Module } from '@nestjs/common';
import { AnnouncementsController } from './announcements.controller';
import { AnnouncementsRepository } from './announcements.repository';

@Module({ controllers: [AnnouncementsController], providers: [AnnouncementsRepository] })
export class AnnouncementsModule {}
