import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { APP_OPTIONS, configureApp } from './app.setup';
import { AppConfig, ConfigError, loadConfig } from './config/app-config';
import { handleShutdownSignals } from './shutdown';

function readConfig(): AppConfig {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}

async function bootstrap(): Promise<void> {
  const config = readConfig();
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(config),
    APP_OPTIONS,
  );
  configureApp(app, config);
  await app.listen(config.port, config.host);
  handleShutdownSignals(app, config.shutdownTimeoutMs);

  const database =
    config.database.kind === 'sqlite'
      ? `embedded SQLite at ${config.database.sqlitePath}`
      : 'MySQL';
  const logger = new Logger('Bootstrap');
  logger.log(`listening on port ${config.port}, database: ${database}`);
  logger.log(
    'create a token with: npm run token -- create --name me --scopes users:read,login_activities:read',
  );
}

void bootstrap();
