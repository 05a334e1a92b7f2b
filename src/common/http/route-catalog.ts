import { RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, VERSION_METADATA } from '@nestjs/common/constants';
import type { INestApplication } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';

const join = (...parts: (string | undefined)[]) =>
  '/' +
  parts
    .flatMap((part) => (part ?? '').split('/'))
    .filter(Boolean)
    .join('/');

/** The paths of every GET route the app's controllers declare, with their `/v<N>` prefix. */
export function collectGetRoutePaths(app: INestApplication): string[] {
  const discovery = app.get(DiscoveryService);
  const scanner = new MetadataScanner();
  const paths: string[] = [];
  for (const wrapper of discovery.getControllers()) {
    const controller = wrapper.metatype as Type<unknown> | undefined;
    if (!controller) continue;
    const base = Reflect.getMetadata(PATH_METADATA, controller) as string | undefined;
    const version = Reflect.getMetadata(VERSION_METADATA, controller) as string | undefined;
    for (const name of scanner.getAllMethodNames(controller.prototype)) {
      const handler = (controller.prototype as Record<string, unknown>)[name] as object;
      if (Reflect.getMetadata(METHOD_METADATA, handler) !== RequestMethod.GET) continue;
      const sub = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
      paths.push(join(version ? `v${version}` : undefined, base, sub));
    }
  }
  return paths;
}
