import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import {
  generateOpenApiDocument,
  OPENAPI_FILE,
  serializeOpenApiDocument,
} from '../openapi/openapi-generation';
import { runCli } from './cli-support';

/** `npm run openapi`: regenerates the checked-in openapi.json from the code (no database needed). */
async function main(): Promise<void> {
  const document = await generateOpenApiDocument();
  writeFileSync(OPENAPI_FILE, serializeOpenApiDocument(document));
  console.log(`wrote ${relative(process.cwd(), OPENAPI_FILE)}`);
}

runCli(main);
