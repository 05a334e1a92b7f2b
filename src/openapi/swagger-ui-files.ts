import { readdirSync } from 'node:fs';
import { dirname, posix } from 'node:path';

/**
 * Whether a GET of `path` is answered with one of the files Swagger UI serves below `/<docsPath>/`,
 * as Express's static files read it: the mount in any case, the name decoded, normalized and
 * exact. swagger-ui-dist's folder is found from @nestjs/swagger, as it finds it; it answers its
 * LICENSE 404 itself. The init scripts are routes, known with the others.
 */
export function swaggerUiFileCheck(docsPath: string): (path: string) => boolean {
  const fromSwagger = { paths: [dirname(require.resolve('@nestjs/swagger'))] };
  const folder = dirname(require.resolve('swagger-ui-dist/absolute-path.js', fromSwagger));
  const files = new Set(readdirSync(folder).filter((file) => file !== 'LICENSE'));
  const mount = `/${docsPath}/`;
  return (path) => {
    if (path.slice(0, mount.length).toLowerCase() !== mount) return false;
    let name: string;
    try {
      name = posix.normalize(`/${decodeURIComponent(path.slice(mount.length))}`);
    } catch {
      return false;
    }
    // A folder: the mount's own (its index.html, Swagger UI's page); swagger-ui-dist has no other.
    return name.endsWith('/') ? name === '/' : files.has(name.slice(1));
  };
}

/** The paths @nestjs/swagger routes Swagger UI's init script to, below `/<docsPath>`. */
export const swaggerUiInitScripts = (docsPath: string) => [
  `/${docsPath}/swagger-ui-init.js`,
  `/${docsPath}/${docsPath}/swagger-ui-init.js`,
];
