import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { bigintColumn, timestampColumn } from '../database/column-types';

@Entity({ name: 'login_activities' })
export class LoginActivity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: number;

  @Column({ type: 'varchar', length: 320 })
  user_email: string;

  @Column({ type: 'varchar', length: 32 })
  authentication_method: string;

  @Column({ type: 'varchar', length: 32, nullable: true })
  oauth_provider: string | null;

  @Column({ type: 'varchar', length: 45 })
  ip_address: string;

  @Column({ type: 'boolean' })
  otp_required: boolean;

  @Column({ type: 'boolean' })
  success: boolean;

  @Column({ type: 'varchar', length: 64, nullable: true })
  failure_reason: string | null;

  @Column({ type: 'varchar', length: 512, nullable: true })
  user_agent: string | null;

  @Column(timestampColumn())
  created_at: Date;

  @Column(bigintColumn({ nullable: true }))
  user_id: number | null;

  @Column({ type: 'varchar', length: 128, nullable: true })
  session_id: string | null;

  /** Internal: lets organization-scoped tokens be served from an index. Not in the API. */
  @Column(bigintColumn({ nullable: true }))
  organization_id: number | null;
}
