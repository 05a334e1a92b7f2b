import { ListingQueryDto } from '../../../src/common/listing/listing-query.dto';
import { EnumParam, IdParam, TimestampParam } from '../../../src/common/validation/query-params';
import { AUDIT_ACTIONS, auditEventsListing } from './audit-events.listing';

export class ListAuditEventsQueryDto extends ListingQueryDto(auditEventsListing) {
  @EnumParam(AUDIT_ACTIONS, 'Only events of this kind.')
  action?: string;

  @IdParam('Only events by this actor.')
  actor_id?: number;

  @TimestampParam('Events at or after this instant (inclusive).')
  created_from?: Date;

  @TimestampParam('Events before this instant (exclusive).')
  created_to?: Date;
}
