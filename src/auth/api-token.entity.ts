import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { bigintColumn, timestampColumn } from '../database/column-types';

@Entity({ name: 'api_tokens' })
export class ApiToken {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: number;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** SHA-256 of the token, hex. The token itself is shown once and never stored. */
  @Column({ type: 'varchar', length: 64 })
  token_hash: string;

  /** The first characters of the token, so an operator can tell tokens apart in `token list`. */
  @Column({ type: 'varchar', length: 16 })
  token_prefix: string;

  /** Space-separated scopes, e.g. `users:read login_activities:read`. */
  @Column({ type: 'varchar', length: 255 })
  scopes: string;

  @Column(bigintColumn({ nullable: true }))
  organization_id: number | null;

  @Column(timestampColumn({ nullable: true }))
  expires_at: Date | null;

  @Column(timestampColumn({ nullable: true }))
  revoked_at: Date | null;

  @Column(timestampColumn({ nullable: true }))
  last_used_at: Date | null;

  @Column(timestampColumn())
  created_at: Date;
}
