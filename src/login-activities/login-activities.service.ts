import { Injectable } from '@nestjs/common';
import type { Principal } from '../common/auth/principal';
import { ListingPager } from '../common/listing/listing-pager';
import type { ListingExport } from '../common/listing/listing-export';
import type { ListingFormat } from '../common/listing/listing-format.decorator';
import type { Page } from '../common/listing/page';
import type { ListLoginActivitiesQueryDto } from './dto/list-login-activities-query.dto';
import type { LoginActivityView } from './dto/login-activity.view';
import { LoginActivitiesRepository } from './login-activities.repository';

@Injectable()
export class LoginActivitiesService {
  constructor(
    private readonly activities: LoginActivitiesRepository,
    private readonly pager: ListingPager,
  ) {}

  list(
    query: ListLoginActivitiesQueryDto,
    principal: Principal,
    format: ListingFormat,
  ): Promise<Page<LoginActivityView> | ListingExport> {
    return this.pager.list(this.activities, query, principal, format);
  }
}
