import { ApiProperty } from '@nestjs/swagger';
import { ApiTimestampProperty } from '../../../src/openapi/api-properties';
import { AUDIT_ACTIONS, AUDIT_GROUPS } from './list-audit-events-query.dto';

export class AuditEventView {
  @ApiProperty({ type: 'integer', format: 'int64' })
  id: number;

  @ApiProperty({ enum: AUDIT_ACTIONS })
  action: string;

  @ApiProperty({ enum: AUDIT_GROUPS })
  group: string;

  @ApiProperty({ type: 'integer', format: 'int64', nullable: true })
  actor_id: number | null;

  @ApiTimestampProperty()
  created_at: string;
}
