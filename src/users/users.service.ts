import { Injectable } from '@nestjs/common';
import type { Principal } from '../common/auth/principal';
import { ListingPager } from '../common/listing/listing-pager';
import type { ListingExport } from '../common/listing/listing-export';
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

  list(query: ListUsersQueryDto, principal: Principal): Promise<Page<UserView>> {
    return this.pager.paginate(this.users, query, principal);
  }

  export(query: ListUsersQueryDto, principal: Principal): Promise<ListingExport> {
    return this.pager.export(this.users, query, principal);
  }
}
