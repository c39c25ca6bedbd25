import { readFileSync } from 'node:fs';
import pg from 'pg';

/** A connection, and the CPU its server backend used (from /proc: the server must run on this machine). */
export interface MeasuredClient {
  readonly client: pg.Client;
  /** User + system CPU of the client's backend so far, in ms (clock ticks of 10 ms). */
  cpuMs(): number;
}

/** Connects and finds the backend's process, so that its CPU can be read around a statement. */
export async function measuredClient(url: string): Promise<MeasuredClient> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const pid = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
  return {
    client,
    cpuMs() {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    },
  };
}
