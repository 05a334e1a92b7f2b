import { ApiProperty } from '@nestjs/swagger';
import { ApiOpenEnumProperty, ApiTimestampProperty } from '../../openapi/api-properties';
import { AUTHENTICATION_METHODS, FAILURE_REASONS, OAUTH_PROVIDERS } from '../login-activity.values';

export class LoginActivityView {
  @ApiProperty({ type: 'integer', format: 'int64', example: 1001 })
  id: number;

  @ApiProperty({
    description: 'The e-mail the attempt was made with (may match no user).',
    example: 'ada@example.com',
  })
  user_email: string;

  @ApiOpenEnumProperty(AUTHENTICATION_METHODS, { example: 'password' })
  authentication_method: string;

  @ApiOpenEnumProperty(OAUTH_PROVIDERS, {
    description: 'Set only when authentication_method is oauth.',
    example: null,
    nullable: true,
  })
  oauth_provider: string | null;

  @ApiProperty({ description: 'IPv4 or IPv6 text form.', example: '203.0.113.7' })
  ip_address: string;

  @ApiProperty({ description: 'A one-time password was demanded.' })
  otp_required: boolean;

  @ApiProperty()
  success: boolean;

  @ApiOpenEnumProperty(FAILURE_REASONS, {
    description: 'null when success is true.',
    example: null,
    nullable: true,
  })
  failure_reason: string | null;

  @ApiProperty({ type: 'string', nullable: true, example: 'Mozilla/5.0' })
  user_agent: string | null;

  @ApiTimestampProperty()
  created_at: string;

  @ApiProperty({
    type: 'integer',
    format: 'int64',
    nullable: true,
    description: 'null when the e-mail matched no user.',
  })
  user_id: number | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'Set only when success is true.',
  })
  session_id: string | null;
}
