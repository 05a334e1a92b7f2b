import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { serverTurn } from './named-lock';
import { seedDemoData } from './seed/demo-data';

export const DEMO_DATA_SIZE = { users: 1000, activities: 5000 };

/**
 * On the embedded default, fills an empty database with demo data at first start, so that a
 * newcomer has something to list right after `npm start`. Run by DatabaseAvailability once the
 * database is connected, before the app counts it as up.
 */
@Injectable()
export class DemoDataBootstrap {
  private readonly logger = new Logger('DemoData');

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async seedIfEmpty(): Promise<void> {
    if (!this.config.database.seedDemoData) return;
    const turn = serverTurn(this.logger, this.config.database.statementTimeoutMs);
    // Told in its turn: another instance started at once may have seeded meanwhile.
    const result = await seedDemoData(this.dataSource, {
      ...DEMO_DATA_SIZE,
      turn,
      onlyIfEmpty: true,
    });
    if (result.skipped) return;
    this.logger.log(
      `seeded demo data: ${result.organizations} organizations, ${result.users} users, ${result.activities} login activities`,
    );
  }
}
