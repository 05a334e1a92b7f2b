import { CanActivate, ExecutionContext, HttpStatus, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IS_PUBLIC } from '../common/auth/auth.decorators';
import { ProblemException } from '../common/problem-details/problem.exception';
import { CONNECTING_RETRY_AFTER_SECONDS, DatabaseAvailability } from './database-availability';

/**
 * Until the database has been connected once, every route that needs a token (all of /v1: the
 * token is looked up in the database) answers 503 with Retry-After. Registered ahead of the
 * bearer guard. Public routes (health, metrics, docs) work without the database.
 */
@Injectable()
export class DatabaseAvailableGuard implements CanActivate {
  constructor(
    private readonly database: DatabaseAvailability,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.database.isUp()) return true;
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    const pending = this.database.reason() === 'migrations_pending';
    throw new ProblemException(
      HttpStatus.SERVICE_UNAVAILABLE,
      pending
        ? "The database lacks this build's migrations (migrations_pending); retry once they are applied."
        : 'The database is not connected yet; retry shortly.',
      { headers: { 'Retry-After': CONNECTING_RETRY_AFTER_SECONDS } },
    );
  }
}
