import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class ParameterErrorView {
  @ApiProperty({ example: 'limit' })
  parameter: string;

  @ApiProperty({ example: 'must be an integer between 1 and 100' })
  message: string;
}

/** RFC 9457 problem details, as every error reply carries them. */
export class ProblemView {
  @ApiProperty({
    example: 'about:blank',
    format: 'uri-reference',
    description: 'A URI naming the problem type; `about:blank` when the status says it all.',
  })
  type: string;

  @ApiProperty({ example: 'Bad Request', description: 'The HTTP reason phrase of the status.' })
  title: string;

  @ApiProperty({ type: 'integer', format: 'int32', example: 400, description: 'The HTTP status.' })
  status: number;

  @ApiProperty({ example: 'limit must be an integer between 1 and 100' })
  detail: string;

  @ApiProperty({
    example: '/v1/users?limit=500',
    description:
      'The path and query of the request, as it was received; for a request the HTTP parser refused (400, 408, 413, 431 before any route), `urn:uuid:<request_id>`.',
  })
  instance: string;

  @ApiPropertyOptional({
    example: '3f0c2a52-8f4e-4c55-9d7b-0c1f3b1f2d1a',
    description: 'The X-Request-Id of the request; quote it when reporting a problem.',
  })
  request_id?: string;

  @ApiPropertyOptional({
    type: [ParameterErrorView],
    description:
      'Present on a 400 about query parameters (one entry each); absent when the request itself is malformed (two Authorization headers, raw non-ASCII in the URL).',
  })
  errors?: ParameterErrorView[];
}
