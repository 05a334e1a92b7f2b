import { ApiProperty } from '@nestjs/swagger';
import { ApiTimestampProperty } from '../../openapi/api-properties';
import { AUTHENTICATION_METHODS, FAILURE_REASONS, OAUTH_PROVIDERS } from '../login-activity.values';

const passThrough =
  'Known values are listed; any other value stored upstream is passed through unchanged, so handle unknown values.';
/** Marks an enum whose list is not closed: replies may carry other strings (see passThrough). */
const openEnum = { 'x-open-enum': true } as const;

export class LoginActivityView {
  @ApiProperty({ type: 'integer', format: 'int64', example: 1001 })
  id: number;

  @ApiProperty({
    description: 'The e-mail the attempt was made with (may match no user).',
    example: 'ada@example.com',
  })
  user_email: string;

  @ApiProperty({
    enum: AUTHENTICATION_METHODS,
    description: passThrough,
    example: 'password',
    ...openEnum,
  })
  authentication_method: string;

  @ApiProperty({
    enum: OAUTH_PROVIDERS,
    ...openEnum,
    nullable: true,
    description: `Set only when authentication_method is oauth. ${passThrough}`,
    example: null,
  })
  oauth_provider: string | null;

  @ApiProperty({ description: 'IPv4 or IPv6 text form.', example: '203.0.113.7' })
  ip_address: string;

  @ApiProperty({ description: 'A one-time password was demanded.' })
  otp_required: boolean;

  @ApiProperty()
  success: boolean;

  @ApiProperty({
    enum: FAILURE_REASONS,
    ...openEnum,
    nullable: true,
    description: `null when success is true. ${passThrough}`,
    example: null,
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
