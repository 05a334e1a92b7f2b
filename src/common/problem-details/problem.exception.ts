import { HttpException, HttpStatus } from '@nestjs/common';

export interface ParameterError {
  parameter: string;
  message: string;
}

export interface ProblemOptions {
  /** Per-parameter errors, listed in the body's `errors` member. */
  errors?: ParameterError[];
  /** Response headers the problem needs (WWW-Authenticate, Retry-After, Allow, …). */
  headers?: Record<string, string>;
  /** A URI naming the problem type; `about:blank` when the status says it all. */
  type?: string;
}

/** An HTTP error that the problem-details filter renders as RFC 9457 problem+json. */
export class ProblemException extends HttpException {
  constructor(
    status: HttpStatus,
    readonly detail: string,
    readonly problem: ProblemOptions = {},
  ) {
    super(detail, status);
  }

  static badRequest(errors: ParameterError[]): ProblemException {
    const detail = errors.map((error) => `${error.parameter} ${error.message}`).join('; ');
    return new ProblemException(HttpStatus.BAD_REQUEST, detail, { errors });
  }
}

/** A conditional GET whose tag matched: the problem-details filter answers it with a bare 304. */
export class NotModified extends HttpException {
  constructor() {
    super('Not Modified', HttpStatus.NOT_MODIFIED);
  }
}
