import { Filter } from '../../../src/common/listing/listing-filter.decorator';
import { ListingQueryDto } from '../../../src/common/listing/listing-query.dto';
import { EnumParam, IdParam, TimestampParam } from '../../../src/common/validation/query-params';

export const AUDIT_ACTIONS = ['sign_in', 'role_changed', 'token_created', 'export'] as const;
export const AUDIT_GROUPS = ['ops', 'security'] as const;

export class ListAuditEventsQueryDto extends ListingQueryDto({
  sortableColumns: ['created_at', 'group'],
}) {
  @Filter('equals')
  @EnumParam(AUDIT_ACTIONS, 'Only events of this kind.')
  action?: string;

  @Filter('equals')
  @EnumParam(AUDIT_GROUPS, 'Only events of this group.')
  group?: string;

  @Filter('equals')
  @IdParam('Only events by this actor.')
  actor_id?: number;

  @Filter('from', 'created_at')
  @TimestampParam('Events at or after this instant (inclusive).')
  created_from?: Date;

  @Filter('to', 'created_at')
  @TimestampParam('Events before this instant (exclusive).')
  created_to?: Date;
}
