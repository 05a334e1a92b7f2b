import { RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, VERSION_METADATA } from '@nestjs/common/constants';
import type { INestApplication } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { IS_PUBLIC } from '../auth/auth.decorators';

const join = (...parts: (string | undefined)[]) =>
  '/' +
  parts
    .flatMap((part) => (part ?? '').split('/'))
    .filter(Boolean)
    .join('/');

/** A GET route the app's controllers declare. */
export interface GetRoute {
  /** With its `/v<N>` prefix. */
  path: string;
  /** Marked `@Public()` (on the handler or its controller): the bearer guard lets it through. */
  isPublic: boolean;
}

/** Every GET route the app's controllers declare. */
export function collectGetRoutes(app: INestApplication): GetRoute[] {
  const discovery = app.get(DiscoveryService);
  const reflector = app.get(Reflector);
  const scanner = new MetadataScanner();
  const routes: GetRoute[] = [];
  for (const wrapper of discovery.getControllers()) {
    const controller = wrapper.metatype as Type<unknown> | undefined;
    if (!controller) continue;
    const base = Reflect.getMetadata(PATH_METADATA, controller) as string | undefined;
    const version = Reflect.getMetadata(VERSION_METADATA, controller) as string | undefined;
    for (const name of scanner.getAllMethodNames(controller.prototype)) {
      const handler = (controller.prototype as Record<string, unknown>)[name] as () => unknown;
      if (Reflect.getMetadata(METHOD_METADATA, handler) !== RequestMethod.GET) continue;
      const sub = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
      routes.push({
        path: join(version ? `v${version}` : undefined, base, sub),
        isPublic: reflector.getAllAndOverride<boolean>(IS_PUBLIC, [handler, controller]) === true,
      });
    }
  }
  return routes;
}
