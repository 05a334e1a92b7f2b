import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { pathAndQuery } from '../http/request-target';
import { redactTokens } from '../auth/token-redaction';
import { NotModified, ProblemException, ProblemOptions } from './problem.exception';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from './database-errors';
import { reasonPhrase } from './reason-phrase';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  request_id?: string;
  errors?: { parameter: string; message: string }[];
}

/** Writes an RFC 9457 problem+json reply; also used by middleware that answers before routing. */
export function sendProblem(
  request: Request,
  response: Response,
  status: number,
  detail: string,
  options: ProblemOptions = {},
): void {
  const body: ProblemBody = {
    type: options.type ?? 'about:blank',
    title: reasonPhrase(status),
    status,
    detail,
    instance: pathAndQuery(request.originalUrl ?? request.url),
    request_id: request.id === undefined ? undefined : String(request.id),
    ...(options.errors ? { errors: options.errors } : {}),
  };
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    response.setHeader(name, value);
  }
  response
    .status(status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(redactTokens(JSON.stringify(body)));
}

/**
 * Renders every error as RFC 9457 problem details. Known errors keep their status and message;
 * anything unexpected is logged and answered with a bare 500 that reveals no internals.
 */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('ProblemDetails');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    if (response.headersSent) return;
    if (exception instanceof NotModified) {
      response.status(HttpStatus.NOT_MODIFIED).end();
      return;
    }

    const { status, detail, options } = this.describe(exception, request);
    sendProblem(request, response, status, detail, options);
  }

  private describe(
    exception: unknown,
    request: Request,
  ): {
    status: number;
    detail: string;
    options: ProblemOptions;
  } {
    if (exception instanceof ProblemException) {
      return {
        status: exception.getStatus(),
        detail: exception.detail,
        options: exception.problem,
      };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      return { status, detail: this.httpExceptionDetail(exception, status), options: {} };
    }
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn({
        msg: `database unavailable: ${describeError(exception)}`,
        req: { id: request.id },
      });
      return {
        status: HttpStatus.SERVICE_UNAVAILABLE,
        detail: DATABASE_UNAVAILABLE.detail,
        options: { headers: { 'Retry-After': DATABASE_UNAVAILABLE.retryAfterSeconds } },
      };
    }
    // The request's id ties this line to the request's own access-log line.
    this.logger.error({
      msg: `unhandled error: ${describeError(exception)}`,
      err: exception instanceof Error ? exception : undefined,
      req: { id: request.id },
    });
    return {
      status: HttpStatus.INTERNAL_SERVER_ERROR,
      detail: 'An unexpected error occurred.',
      options: {},
    };
  }

  private httpExceptionDetail(exception: HttpException, status: number): string {
    if (status === HttpStatus.NOT_FOUND) return 'No resource lives at this path.';
    const response = exception.getResponse();
    if (typeof response === 'string') return response;
    const message = (response as { message?: unknown }).message;
    if (Array.isArray(message)) return message.join('; ');
    if (typeof message === 'string') return message;
    return exception.message;
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
