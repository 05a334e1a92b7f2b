import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { timestampColumn } from '../database/column-types';

@Entity({ name: 'organizations' })
export class Organization {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: number;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column(timestampColumn())
  created_at: Date;
}

@Entity({ name: 'roles' })
export class Role {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: number;

  @Column({ type: 'varchar', length: 100 })
  name: string;
}
