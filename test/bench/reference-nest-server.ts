/**
 * The framework's own floor for issue 5: the listing of reference-listing.ts, unchanged, in the
 * barest NestJS app on Express there is (one module, one controller, no middleware, guard, pipe,
 * interceptor or logger). What it loses against reference-server.ts is what NestJS on Express
 * costs before the service does anything of its own.
 *
 * Started by the bench like reference-server.ts; not part of the service.
 */
import 'reflect-metadata';
import { Controller, Get, Module, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { answer } from './reference-listing';
import { serveYardstick } from './reference-nest-bootstrap';

@Controller('v1')
class ListingController {
  @Get(':table')
  async list(@Req() request: Request, @Res() response: Response): Promise<void> {
    const { status, body } = await answer(request.url, request.headers.authorization);
    response.status(status).json(body);
  }
}

@Module({ controllers: [ListingController] })
class ReferenceModule {}

void serveYardstick(ReferenceModule);
