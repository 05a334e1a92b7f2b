import { Injectable } from '@nestjs/common';
import type { Principal } from '../common/auth/principal';
import { ListingPager } from '../common/listing/listing-pager';
import type { ListingExport } from '../common/listing/listing-export';
import type { ListingFormat } from '../common/listing/listing-format.decorator';
import type { Page } from '../common/listing/page';
import type { ListUsersQueryDto } from './dto/list-users-query.dto';
import type { UserView } from './dto/user.view';
import { UsersRepository } from './users.repository';

@Injectable()
export class UsersService {
  constructor(
    private readonly users: UsersRepository,
    private readonly pager: ListingPager,
  ) {}

  list(
    query: ListUsersQueryDto,
    principal: Principal,
    format: ListingFormat,
  ): Promise<Page<UserView> | ListingExport> {
    return this.pager.list(this.users, query, principal, format);
  }
}
