import { ApiProperty } from '@nestjs/swagger';
import { ApiTimestampProperty } from '../../../src/openapi/api-properties';

export class AnnouncementView {
  @ApiProperty({ type: 'integer', format: 'int64' })
  id: number;

  @ApiProperty()
  title: string;

  @ApiTimestampProperty()
  created_at: string;

  @ApiTimestampProperty()
  updated_at: string;
}
