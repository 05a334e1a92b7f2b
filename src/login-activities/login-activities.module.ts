import { Module } from '@nestjs/common';
import { LoginActivitiesController } from './login-activities.controller';
import { LoginActivitiesRepository } from './login-activities.repository';
import { LoginActivitiesService } from './login-activities.service';

@Module({
  controllers: [LoginActivitiesController],
  providers: [LoginActivitiesService, LoginActivitiesRepository],
})
export class LoginActivitiesModule {}
