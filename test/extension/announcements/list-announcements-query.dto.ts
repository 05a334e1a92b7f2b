import { Filter } from '../../../src/common/listing/listing-filter.decorator';
import { ListingQueryDto } from '../../../src/common/listing/listing-query.dto';
import { TimestampParam } from '../../../src/common/validation/query-params';

export class ListAnnouncementsQueryDto extends ListingQueryDto({
  sortableColumns: ['created_at', 'updated_at'],
}) {
  @Filter('from', 'created_at')
  @TimestampParam('Announcements at or after this instant (inclusive).')
  created_from?: Date;

  @Filter('from', 'updated_at')
  @TimestampParam('Announcements changed at or after this instant (inclusive).')
  updated_from?: Date;
}
