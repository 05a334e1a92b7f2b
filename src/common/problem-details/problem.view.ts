import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class ParameterErrorView {
  @ApiProperty({ example: 'limit' })
  parameter: string;

  @ApiProperty({ example: 'must be an integer between 1 and 100' })
  message: string;
}

/** RFC 9457 problem details, as every error reply carries them. */
export class ProblemView {
  @ApiProperty({ example: 'about:blank', format: 'uri-reference' })
  type: string;

  @ApiProperty({ example: 'Bad Request' })
  title: string;

  @ApiProperty({ type: 'integer', example: 400 })
  status: number;

  @ApiProperty({ example: 'limit must be an integer between 1 and 100' })
  detail: string;

  @ApiProperty({ example: '/v1/users?limit=500', format: 'uri-reference' })
  instance: string;

  @ApiPropertyOptional({ example: '3f0c2a52-8f4e-4c55-9d7b-0c1f3b1f2d1a' })
  request_id?: string;

  @ApiPropertyOptional({ type: [ParameterErrorView], description: 'Present on 400 replies.' })
  errors?: ParameterErrorView[];
}
