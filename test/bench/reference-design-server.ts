/**
 * The design's own floor for issue 5: the listing of reference-listing.ts in a NestJS app on
 * Express with only the per-request pieces the developers' guide prescribes for every route, each
 * in its stock form: a global bearer guard through @nestjs/passport and passport-http-bearer, a
 * global ValidationPipe (class-validator, class-transformer) on a pagination DTO, and a global
 * interceptor that builds the `{data, pagination}` envelope. No middleware, logger, metrics,
 * request ids, ETag, Link or security headers: what the contract adds on top is the service's.
 *
 * Between `nest` (the bare framework) and the service, it shows how much of the gap the prescribed
 * design takes before the contract's per-request features. Started by the bench like
 * reference-server.ts; not part of the service.
 */
import 'reflect-metadata';
import {
  CallHandler,
  Controller,
  ExecutionContext,
  Get,
  Injectable,
  Module,
  NestInterceptor,
  NotFoundException,
  Param,
  Query,
  ValidationPipe,
} from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { AuthGuard, PassportModule, PassportStrategy } from '@nestjs/passport';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { Strategy } from 'passport-http-bearer';
import { map, type Observable } from 'rxjs';
import {
  envelopeOf,
  isKnownToken,
  isListing,
  readPage,
  type ReferencePage,
} from './reference-listing';
import { serveYardstick } from './reference-nest-bootstrap';

class PageQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  page = 1;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit = 20;
}

@Injectable()
class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  async validate(token: string): Promise<{ token: true } | false> {
    return (await isKnownToken(token)) ? { token: true } : false;
  }
}

@Injectable()
class BearerGuard extends AuthGuard('bearer') {}

@Injectable()
class EnvelopeInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(map((page: ReferencePage) => envelopeOf(page)));
  }
}

@Controller('v1')
class ListingController {
  @Get(':table')
  async list(@Param('table') table: string, @Query() query: PageQuery): Promise<ReferencePage> {
    if (!isListing(table)) throw new NotFoundException();
    return readPage(table, query.page, query.limit);
  }
}

@Module({
  imports: [PassportModule],
  controllers: [ListingController],
  providers: [
    BearerStrategy,
    { provide: APP_GUARD, useClass: BearerGuard },
    {
      provide: APP_PIPE,
      useValue: new ValidationPipe({
        transform: true,
        whitelist: true,
        forbidNonWhitelisted: true,
      }),
    },
    { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
  ],
})
class DesignModule {}

void serveYardstick(DesignModule);
