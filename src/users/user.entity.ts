import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { bigintColumn, timestampColumn } from '../database/column-types';

@Entity({ name: 'users' })
export class User {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: number;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'varchar', length: 320 })
  email: string;

  @Column(bigintColumn())
  role_id: number;

  @Column(bigintColumn())
  organization_id: number;

  @Column(timestampColumn())
  created_at: Date;

  @Column(timestampColumn())
  updated_at: Date;
}
