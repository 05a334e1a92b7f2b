import { judgeReplica, lagBoundMs, readReplicaStatus } from './replica-status';

describe('SHOW REPLICA STATUS, as MariaDB and MySQL answer it', () => {
  const mariadb = {
    Slave_IO_Running: 'Yes',
    Slave_SQL_Running: 'Yes',
    Seconds_Behind_Master: 0,
    Last_IO_Error: '',
    Last_SQL_Error: '',
  };
  const mysql = {
    Replica_IO_Running: 'Yes',
    Replica_SQL_Running: 'Yes',
    Seconds_Behind_Source: 3,
    Last_IO_Error: '',
    Last_SQL_Error: '',
  };

  it('reads both spellings of the columns', () => {
    expect(readReplicaStatus(mariadb)).toEqual({
      ioRunning: 'Yes',
      sqlRunning: 'Yes',
      secondsBehind: 0,
      lastError: '',
    });
    expect(readReplicaStatus(mysql)).toMatchObject({ ioRunning: 'Yes', secondsBehind: 3 });
    expect(readReplicaStatus(undefined)).toBeUndefined();
  });

  it('keeps a replica in the rotation while both threads run and it is within the bound', () => {
    expect(judgeReplica(readReplicaStatus(mariadb), 5000)).toEqual({ inRotation: true });
    // Reported in whole seconds, rounded down: 4 s may be 4.99 s, still within 5 s; 5 s may not be.
    expect(judgeReplica(readReplicaStatus({ ...mariadb, Seconds_Behind_Master: 4 }), 5000)).toEqual(
      {
        inRotation: true,
      },
    );
    expect(lagBoundMs(4)).toBe(5000);
  });

  it('takes it out, saying why, when it lags, does not replicate or is no replica', () => {
    const judge = (row: Record<string, unknown> | undefined) =>
      judgeReplica(readReplicaStatus(row), 5000);
    expect(judge({ ...mariadb, Seconds_Behind_Master: 5 })).toEqual({
      inRotation: false,
      reason: 'lagging',
      detail: '5 s behind',
    });
    expect(
      judge({
        ...mysql,
        Replica_SQL_Running: 'No',
        Seconds_Behind_Source: null,
        Last_SQL_Error: 'Duplicate entry',
      }),
    ).toEqual({
      inRotation: false,
      reason: 'sql_thread_stopped',
      detail: 'SQL thread No',
    });
    // The server's error names the primary's host and user: it stays out of the public detail.
    const reconnecting = {
      ...mariadb,
      Slave_IO_Running: 'Connecting',
      Seconds_Behind_Master: null,
      Last_IO_Error: "error reconnecting to master 'repl@10.0.0.5:3306' - retry-time: 60",
    };
    expect(readReplicaStatus(reconnecting)?.lastError).toContain('10.0.0.5');
    expect(judge(reconnecting)).toEqual({
      inRotation: false,
      reason: 'io_thread_stopped',
      detail: 'IO thread Connecting',
    });
    expect(judge({ ...mariadb, Seconds_Behind_Master: null })).toMatchObject({
      inRotation: false,
      reason: 'lagging',
    });
    expect(judge(undefined)).toMatchObject({ inRotation: false, reason: 'not_a_replica' });
  });
});
