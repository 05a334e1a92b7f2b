import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireScopes } from '../common/auth/auth.decorators';
import type { Principal } from '../common/auth/principal';
import { ApiListing } from '../common/listing/api-listing.decorator';
import type { ListingExport } from '../common/listing/listing-export';
import { ListingFormat } from '../common/listing/listing-format.decorator';
import type { Page } from '../common/listing/page';
import { ListLoginActivitiesQueryDto } from './dto/list-login-activities-query.dto';
import { LoginActivityView } from './dto/login-activity.view';
import { LoginActivitiesService } from './login-activities.service';
import { LOGIN_ACTIVITIES_READ } from './login-activities.listing';

@ApiTags('login_activities')
@Controller({ path: 'login_activities', version: '1' })
export class LoginActivitiesController {
  constructor(private readonly activities: LoginActivitiesService) {}

  @Get()
  @RequireScopes(LOGIN_ACTIVITIES_READ)
  @ApiListing(LoginActivityView, {
    summary: 'List login activity (every authentication attempt)',
    envelopeName: 'LoginActivityPage',
  })
  list(
    @Query() query: ListLoginActivitiesQueryDto,
    @CurrentPrincipal() principal: Principal,
    @ListingFormat() format: ListingFormat,
  ): Promise<Page<LoginActivityView> | ListingExport> {
    return this.activities.list(query, principal, format);
  }
}
