import { ApiProperty } from '@nestjs/swagger';
import { ApiTimestampProperty } from '../../openapi/api-properties';

export class UserView {
  @ApiProperty({ type: 'integer', format: 'int64', example: 42 })
  id: number;

  @ApiProperty({ example: 'Ada Lovelace' })
  name: string;

  @ApiProperty({
    description: 'The e-mail address as the platform stored it (not checked to be one).',
    example: 'ada@example.com',
  })
  email: string;

  @ApiProperty({ type: 'integer', format: 'int64', example: 2 })
  role_id: number;

  @ApiProperty({ example: 'admin' })
  role_name: string;

  @ApiProperty({ type: 'integer', format: 'int64', example: 7 })
  organization_id: number;

  @ApiProperty({ example: 'Acme Corp' })
  organization_name: string;

  @ApiTimestampProperty()
  created_at: string;

  @ApiTimestampProperty()
  updated_at: string;
}
