import {
  createParamDecorator,
  ExecutionContext,
  SetMetadata,
  applyDecorators,
} from '@nestjs/common';
import { ApiBearerAuth, ApiExtension } from '@nestjs/swagger';
import type { Principal, Scope } from './principal';
import { defineScope } from './scope-registry';

export const IS_PUBLIC = 'auth:isPublic';
export const REQUIRED_SCOPES = 'auth:requiredScopes';

/** Opts a route (or controller) out of the global bearer guard. */
export const Public = () => SetMetadata(IS_PUBLIC, true);

/**
 * The scopes a route needs. Naming a scope here registers it (tokens may then be issued with it)
 * and documents it in OpenAPI (`x-required-scopes`, the operation's description).
 */
export const RequireScopes = (...scopes: Scope[]) => {
  for (const scope of scopes) defineScope(scope);
  return applyDecorators(
    SetMetadata(REQUIRED_SCOPES, scopes),
    ApiBearerAuth('bearer'),
    ApiExtension('x-required-scopes', scopes),
  );
};

/** The authenticated caller of the current request. */
export const CurrentPrincipal = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Principal =>
    context.switchToHttp().getRequest<{ user: Principal }>().user,
);
