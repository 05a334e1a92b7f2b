import { Inject, Injectable, Optional } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/app-config';
import {
  toIsoTimestamp,
  toNullableInteger,
  toInteger,
  toSqlDatetime,
} from '../database/row-values';
import { Statement, StatementRunners } from '../database/statement-runner';
import { ApiToken } from './api-token.entity';

export interface NewApiToken {
  name: string;
  tokenHash: string;
  tokenPrefix: string;
  scopes: string[];
  organizationId: number | null;
  expiresAt: Date | null;
}

/** SQL for `api_tokens`, always on the primary: a replica's lag must not delay a revocation. */
@Injectable()
export class ApiTokensRepository {
  /** The service's look-ups; absent in the CLI, which looks no token up. */
  private readonly lookUps?: { statements: StatementRunners; limitMs: number };

  constructor(
    private readonly dataSource: DataSource,
    @Optional() statements?: StatementRunners,
    @Optional() @Inject(APP_CONFIG) config?: AppConfig,
  ) {
    if (statements && config) {
      this.lookUps = { statements, limitMs: config.database.statementTimeoutMs };
    }
  }

  /**
   * On the primary also with DATABASE_REPLICA_URLS: the look-ups are cached (TOKEN_CACHE_TTL_MS),
   * so the primary sees one per token and instance per TTL. Under the statement limit, as every
   * listing read: a locked token table must not hold requests past it.
   */
  async findByHash(tokenHash: string): Promise<ApiToken | null> {
    const rows = await this.onPrimary({
      sql: 'SELECT * FROM api_tokens WHERE token_hash = :tokenHash',
      params: { tokenHash },
    });
    return rows.length === 0 ? null : tokenOf(rows[0]);
  }

  private async onPrimary(statement: Statement): Promise<Record<string, unknown>[]> {
    if (!this.lookUps) throw new Error('tokens are looked up by the service only');
    const { statements, limitMs } = this.lookUps;
    return statements.onPrimary(
      (runner, statementRunner) => statementRunner.run<Record<string, unknown>>(runner, statement),
      limitMs,
    );
  }

  async insert(token: NewApiToken): Promise<ApiToken> {
    const repository = this.dataSource.getRepository(ApiToken);
    const saved = await repository.save(
      repository.create({
        name: token.name,
        token_hash: token.tokenHash,
        token_prefix: token.tokenPrefix,
        scopes: token.scopes.join(' '),
        organization_id: token.organizationId,
        expires_at: token.expiresAt,
        revoked_at: null,
        last_used_at: null,
        created_at: new Date(),
      }),
    );
    return saved;
  }

  list(): Promise<ApiToken[]> {
    return this.dataSource.getRepository(ApiToken).find({ order: { id: 'ASC' } });
  }

  /** Marks a token revoked; false when no such token exists or it was revoked already. */
  async revoke(id: number, at = new Date()): Promise<boolean> {
    const result = await this.dataSource
      .createQueryBuilder()
      .update(ApiToken)
      .set({ revoked_at: at })
      .where('id = :id AND revoked_at IS NULL', { id })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /**
   * On the primary, under the statement limit as a look-up is: waiting for a lock on the table
   * (a dump's), it must not keep its pool connection from the requests.
   */
  /** Never back: a use retried late (a lock) must not replace a later one another instance wrote. */
  async touchLastUsed(id: number, at: Date): Promise<void> {
    await this.onPrimary({
      sql: 'UPDATE api_tokens SET last_used_at = :at WHERE id = :id AND (last_used_at IS NULL OR last_used_at < :at)',
      params: { at: toSqlDatetime(at), id },
    });
  }
}

const dateOf = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toIsoTimestamp(value));

function tokenOf(row: Record<string, unknown>): ApiToken {
  return Object.assign(new ApiToken(), {
    id: toInteger(row.id),
    name: String(row.name),
    token_hash: String(row.token_hash),
    token_prefix: String(row.token_prefix),
    scopes: String(row.scopes),
    organization_id: toNullableInteger(row.organization_id),
    expires_at: dateOf(row.expires_at),
    revoked_at: dateOf(row.revoked_at),
    last_used_at: dateOf(row.last_used_at),
    created_at: dateOf(row.created_at)!,
  });
}
