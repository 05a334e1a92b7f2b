/**
 * Why a replica is out of the read rotation (a fixed set: it labels a metric). `unchecked`: not
 * checked yet; `down`: its check could not connect or timed out; `not_permitted`: its user may
 * not read its replication status; `not_a_replica`: it replicates from nothing;
 * `io_thread_stopped` / `sql_thread_stopped`: it does not receive / apply the primary's changes;
 * `lagging`: further behind than REPLICA_MAX_LAG_MS; `failed`: a request's statement lost its
 * connection there (until its next check passes).
 */
export const OUT_OF_ROTATION_REASONS = [
  'unchecked',
  'down',
  'not_permitted',
  'not_a_replica',
  'io_thread_stopped',
  'sql_thread_stopped',
  'lagging',
  'failed',
] as const;

export type OutOfRotationReason = (typeof OUT_OF_ROTATION_REASONS)[number];

/** What `SHOW REPLICA STATUS` says of a replica, in the terms both servers share. */
export interface ReplicaStatus {
  ioRunning: string;
  sqlRunning: string;
  /** Seconds behind the primary; null when the server cannot say (a thread stopped). */
  secondsBehind: number | null;
  /** The last replication error, if any (the server's own words). */
  lastError: string;
}

/**
 * The replica's status from its `SHOW REPLICA STATUS` row, or undefined when it has none (not a
 * replica). MariaDB keeps the old column names (`Slave_IO_Running`, `Seconds_Behind_Master`),
 * MySQL 8.0.22+ answers with the new ones (`Replica_IO_Running`, `Seconds_Behind_Source`).
 */
export function readReplicaStatus(
  row: Record<string, unknown> | undefined,
): ReplicaStatus | undefined {
  if (!row) return undefined;
  const pick = (...names: string[]) => {
    const name = names.find((candidate) => candidate in row);
    return name === undefined ? undefined : row[name];
  };
  const behind = pick('Seconds_Behind_Master', 'Seconds_Behind_Source');
  const lastError = [pick('Last_IO_Error'), pick('Last_SQL_Error')].find(
    (error) => typeof error === 'string' && error !== '',
  );
  return {
    ioRunning: String(pick('Slave_IO_Running', 'Replica_IO_Running') ?? ''),
    sqlRunning: String(pick('Slave_SQL_Running', 'Replica_SQL_Running') ?? ''),
    secondsBehind: behind === null || behind === undefined || behind === '' ? null : Number(behind),
    lastError: (lastError as string | undefined) ?? '',
  };
}

/**
 * Whether a replica in `status` may serve reads, and if not, why. `detail` is shown in the public
 * readiness reply, so it never carries the server's own error text (it names hosts and users).
 */
export function judgeReplica(
  status: ReplicaStatus | undefined,
  maxLagMs: number,
): { inRotation: true } | { inRotation: false; reason: OutOfRotationReason; detail: string } {
  if (!status)
    return { inRotation: false, reason: 'not_a_replica', detail: 'no replication status' };
  if (status.ioRunning !== 'Yes') {
    return { inRotation: false, reason: 'io_thread_stopped', detail: describe('IO', status) };
  }
  if (status.sqlRunning !== 'Yes') {
    return { inRotation: false, reason: 'sql_thread_stopped', detail: describe('SQL', status) };
  }
  if (status.secondsBehind === null || !Number.isFinite(status.secondsBehind)) {
    return { inRotation: false, reason: 'lagging', detail: 'lag unknown' };
  }
  // Whole seconds: a replica reported N s behind may be up to N + 1 s behind.
  if (lagBoundMs(status.secondsBehind) > maxLagMs) {
    return { inRotation: false, reason: 'lagging', detail: `${status.secondsBehind} s behind` };
  }
  return { inRotation: true };
}

/** How far behind a replica reported `seconds` behind may be: the server rounds down. */
export const lagBoundMs = (seconds: number): number => (seconds + 1) * 1000;

const describe = (thread: string, status: ReplicaStatus) =>
  `${thread} thread ${status[thread === 'IO' ? 'ioRunning' : 'sqlRunning'] || 'not running'}`;
