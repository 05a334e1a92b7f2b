import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireScopes } from '../common/auth/auth.decorators';
import type { Principal } from '../common/auth/principal';
import { ApiListing } from '../common/listing/api-listing.decorator';
import type { ListingExport } from '../common/listing/listing-export';
import { ListingFormat } from '../common/listing/listing-format.decorator';
import type { Page } from '../common/listing/page';
import { ListUsersQueryDto } from './dto/list-users-query.dto';
import { UserView } from './dto/user.view';
import { UsersService } from './users.service';
import { USERS_READ } from './users.listing';

@ApiTags('users')
@Controller({ path: 'users', version: '1' })
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Get()
  @RequireScopes(USERS_READ)
  @ApiListing(UserView, { summary: 'List users', envelopeName: 'UserPage' })
  list(
    @Query() query: ListUsersQueryDto,
    @CurrentPrincipal() principal: Principal,
    @ListingFormat() format: ListingFormat,
  ): Promise<Page<UserView> | ListingExport> {
    return this.users.list(query, principal, format);
  }
}
