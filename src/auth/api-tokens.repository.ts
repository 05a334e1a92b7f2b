import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { toSqlDatetime } from '../database/row-values';
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
  constructor(private readonly dataSource: DataSource) {}

  /**
   * On the primary also with DATABASE_REPLICA_URLS (TypeORM would read from a replica): the
   * look-ups are cached (TOKEN_CACHE_TTL_MS), so the primary sees one per token and instance per TTL.
   */
  async findByHash(tokenHash: string): Promise<ApiToken | null> {
    const runner = this.dataSource.createQueryRunner('master');
    try {
      return await runner.manager.findOne(ApiToken, { where: { token_hash: tokenHash } });
    } finally {
      await runner.release();
    }
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

  /** Always on the primary, also when reads go to replicas. */
  async touchLastUsed(id: number, at: Date): Promise<void> {
    // DataSource.query runs on a 'master' query runner: the primary.
    await this.dataSource.query('UPDATE api_tokens SET last_used_at = ? WHERE id = ?', [
      toSqlDatetime(at),
      id,
    ]);
  }
}
