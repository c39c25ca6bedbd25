import { parseArgs } from 'node:util';
import { checkName, validateIdentifier } from '@leasehold/core/internal';
import { dashboardArgsOf, type DashboardArgs } from './dashboard-args.js';
import { UsageError } from './errors.js';
import { checked, durationOf } from './option-values.js';
import { workerArgsOf, type WorkerArgs } from './worker-args.js';
import { tasksListArgsOf, type TasksListArgs } from './tasks-list-args.js';

/** The commands, as typed (`dead list` is one command of two words). */
export const COMMANDS = [
  'migrate', 'stats', 'dead list', 'dead retry', 'dead skip', 'purge', 'watch', 'dashboard',
  'schedules list', 'schedules pause', 'schedules resume', 'cancel', 'task show', 'task fork', 'tasks list', 'patches', 'worker', 'help', 'version',
] as const;

/** One of {@link COMMANDS}. */
export type Command = (typeof COMMANDS)[number];

/** The leased tables the CLI knows. */
export const TABLE_NAMES = ['task', 'outbox'] as const;

/** One of {@link TABLE_NAMES}. */
export type TableName = (typeof TABLE_NAMES)[number];

/** A parsed, checked command line. */
export interface Invocation {
  readonly command: Command;
  /** `--database-url`, when given. */
  readonly databaseUrl: string | undefined;
  /** `--schema`, validated. @defaultValue 'leasehold' */
  readonly schema: string;
  readonly json: boolean;
  /** `stats --format`: a text table, or Prometheus' text format. @defaultValue 'text' */
  readonly format: StatsFormat;
  readonly embedded: boolean;
  /** `--table`: restricts `dead …` and `purge` to one table. */
  readonly table: TableName | undefined;
  /**
   * Positional ids of `dead retry` / `dead skip`, as typed (`12`, `task:12`, `12,13`); the
   * schedule names of `schedules pause` / `schedules resume`; the one task id of `cancel` and
   * `task show`.
   */
  readonly ids: readonly string[];
  readonly all: boolean;
  readonly reason: string | undefined;
  readonly limit: number;
  readonly olderThanMs: number | undefined;
  readonly olderThanText: string | undefined;
  readonly intervalMs: number;
  readonly withInbox: boolean;
  /** `patches --task`: only this task name. */
  readonly task: string | undefined;
  /** `patches --patch`: only this patch id. */
  readonly patch: string | undefined;
  /** `task fork --from`: the recorded step the fork runs again from. */
  readonly fromStep: string | undefined;
  /** `dashboard`'s `--host`, `--port`, `--token`, `--read-only`. */
  readonly dashboard: DashboardArgs;
  /** `worker`'s `--tasks` and the worker's options. */
  readonly worker: WorkerArgs;
  /** `tasks list`'s filters and page. */
  readonly tasksList: TasksListArgs;
}

const OPTIONS = {
  'database-url': { type: 'string' },
  schema: { type: 'string' },
  json: { type: 'boolean' },
  format: { type: 'string' },
  embedded: { type: 'boolean' },
  table: { type: 'string' },
  limit: { type: 'string' },
  all: { type: 'boolean' },
  reason: { type: 'string' },
  'older-than': { type: 'string' },
  interval: { type: 'string' },
  'with-inbox': { type: 'boolean' },
  host: { type: 'string' },
  port: { type: 'string' },
  token: { type: 'string' },
  'read-only': { type: 'boolean' },
  task: { type: 'string' },
  patch: { type: 'string' },
  from: { type: 'string' },
  tasks: { type: 'string' },
  concurrency: { type: 'string' },
  'poll-interval': { type: 'string' },
  'no-listen': { type: 'boolean' },
  'listen-connection-string': { type: 'string' },
  'no-prepared-statements': { type: 'boolean' },
  migrate: { type: 'boolean' },
  'shutdown-timeout': { type: 'string' },
  name: { type: 'string' },
  status: { type: 'string' },
  parent: { type: 'string' },
  'created-after': { type: 'string' },
  'created-before': { type: 'string' },
  after: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

type OptionName = keyof typeof OPTIONS;

const GLOBAL: readonly OptionName[] = ['database-url', 'schema', 'json', 'embedded', 'help', 'version'];

// options each command accepts besides the global ones
const ALLOWED: Readonly<Record<Command, readonly OptionName[]>> = {
  migrate: ['with-inbox'],
  stats: ['format'],
  'dead list': ['table', 'limit'],
  'dead retry': ['table', 'all', 'reason'],
  'dead skip': ['table', 'reason'],
  purge: ['table', 'older-than'],
  watch: ['interval'],
  dashboard: ['host', 'port', 'token', 'read-only'],
  'schedules list': [],
  'schedules pause': [],
  'schedules resume': [],
  cancel: ['reason'],
  'task show': [],
  'task fork': ['from'],
  'tasks list': ['name', 'status', 'parent', 'created-after', 'created-before', 'limit', 'after'],
  patches: ['task', 'patch'],
  worker: [
    'tasks', 'concurrency', 'poll-interval', 'no-listen', 'listen-connection-string', 'no-prepared-statements', 'migrate', 'shutdown-timeout',
  ],
  help: [],
  version: [],
};

/**
 * Parses `argv` (without `node` and the script). Throws {@link UsageError} saying what is wrong.
 *
 * @example
 * parseCommandLine(['dead', 'retry', 'task:12', '--reason', 'fixed the mail server']);
 */
export function parseCommandLine(argv: readonly string[]): Invocation {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\. To specify a positional.*$/s, '.'));
  }
  const { values, positionals } = parsed;
  const [command, rest] = commandOf(positionals, values.help === true, values.version === true);
  for (const name of Object.keys(values) as OptionName[]) {
    if (!GLOBAL.includes(name) && !ALLOWED[command].includes(name)) {
      throw new UsageError(`option --${name} does not apply to "leasehold ${command}"`);
    }
  }
  checkPositionals(command, rest, values.all === true);
  if (values.embedded && values['database-url'] !== undefined) {
    throw new UsageError('give either --embedded or --database-url, not both');
  }
  if (command === 'task fork' && values.from === undefined) {
    throw new UsageError('task fork needs --from, the recorded step to run again from (e.g. "leasehold task fork task:12 --from charge")');
  }
  if (command === 'purge' && values['older-than'] === undefined) {
    throw new UsageError('purge needs --older-than, e.g. "leasehold purge --older-than 7d"');
  }
  return Object.freeze({
    command,
    databaseUrl: values['database-url'],
    schema: checked(() => validateIdentifier(values.schema ?? 'leasehold', 'schema'), '--schema'),
    json: values.json === true,
    format: formatOf(values.format, values.json === true),
    embedded: values.embedded === true,
    table: tableOf(values.table),
    ids: Object.freeze([...rest]),
    all: values.all === true,
    reason: reasonOf(values.reason),
    limit: command === 'tasks list' ? 50 : limitOf(values.limit),
    olderThanMs: values['older-than'] === undefined ? undefined : durationOf(values['older-than'], '--older-than', true, '30s, 15m, 7d'),
    olderThanText: values['older-than'],
    intervalMs: values.interval === undefined ? 2_000 : durationOf(values.interval, '--interval', false),
    withInbox: values['with-inbox'] === true,
    task: values.task === undefined ? undefined : checked(() => checkName(values.task, '--task'), '--task'),
    patch: values.patch === undefined ? undefined : checked(() => checkName(values.patch, '--patch'), '--patch'),
    fromStep: values.from === undefined ? undefined : checked(() => checkName(values.from, '--from'), '--from'),
    dashboard: dashboardArgsOf(values),
    worker: workerArgsOf(values, command === 'worker'),
    tasksList: tasksListArgsOf(command === 'tasks list' ? values : {}),
  });
}

function commandOf(positionals: readonly string[], help: boolean, version: boolean): [Command, string[]] {
  if (help) return ['help', []];
  if (version) return ['version', []];
  const [first, second, ...rest] = positionals;
  if (first === undefined) throw new UsageError('no command given');
  if (first === 'dead') {
    const command = `dead ${second ?? ''}`;
    if (second === undefined || !(COMMANDS as readonly string[]).includes(command)) {
      throw new UsageError(`"leasehold dead" needs one of: list, retry, skip${second === undefined ? '' : ` (got "${second}")`}`);
    }
    return [command as Command, rest];
  }
  if (first === 'schedules') {
    // "leasehold schedules" alone lists them
    const command = `schedules ${second ?? 'list'}`;
    if (!(COMMANDS as readonly string[]).includes(command)) {
      throw new UsageError(`"leasehold schedules" needs one of: list, pause, resume (got "${second}")`);
    }
    return [command as Command, rest];
  }
  if (first === 'tasks') {
    // "leasehold tasks" alone lists them
    const command = `tasks ${second ?? 'list'}`;
    if (command !== 'tasks list') throw new UsageError(`"leasehold tasks" needs one of: list (got "${second}")`);
    return [command, rest];
  }
  if (first === 'task') {
    const command = `task ${second ?? ''}`;
    if (second === undefined || !(COMMANDS as readonly string[]).includes(command)) {
      throw new UsageError(`"leasehold task" needs one of: show, fork${second === undefined ? '' : ` (got "${second}")`}`);
    }
    return [command as Command, rest];
  }
  if (!(COMMANDS as readonly string[]).includes(first) || first.includes(' ')) {
    throw new UsageError(`unknown command "${first}"`);
  }
  return [first as Command, second === undefined ? [] : [second, ...rest]];
}

function checkPositionals(command: Command, rest: readonly string[], all: boolean): void {
  if (command === 'dead retry' && all) {
    if (rest.length > 0) throw new UsageError('give either ids or --all, not both');
    return;
  }
  if (command === 'dead retry' || command === 'dead skip') {
    if (rest.length === 0) {
      throw new UsageError(`${command} needs ids (e.g. "task:12 outbox:7"${command === 'dead retry' ? ') or --all' : ')'}`);
    }
    return;
  }
  if (command === 'schedules pause' || command === 'schedules resume') {
    if (rest.length === 0) throw new UsageError(`${command} needs schedule names (as "leasehold schedules" lists them)`);
    return;
  }
  if (command === 'cancel' || command === 'task show' || command === 'task fork') {
    if (rest.length !== 1) throw new UsageError(`${command} needs one task id (e.g. "leasehold ${command} task:12")`);
    return;
  }
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}" for "leasehold ${command}"`);
}

/** What `stats --format` accepts. */
export const STATS_FORMATS = ['text', 'prometheus'] as const;

/** One of {@link STATS_FORMATS}. */
export type StatsFormat = (typeof STATS_FORMATS)[number];

function formatOf(value: string | undefined, json: boolean): StatsFormat {
  if (value === undefined) return 'text';
  if (!(STATS_FORMATS as readonly string[]).includes(value)) throw new UsageError(`--format must be one of ${STATS_FORMATS.join(', ')}, got "${value}"`);
  if (json) throw new UsageError('give either --json or --format, not both');
  return value as StatsFormat;
}

function tableOf(value: string | undefined): TableName | undefined {
  if (value === undefined) return undefined;
  if (!(TABLE_NAMES as readonly string[]).includes(value)) {
    throw new UsageError(`--table must be one of ${TABLE_NAMES.join(', ')}, got "${value}"`);
  }
  return value as TableName;
}

function limitOf(value: string | undefined): number {
  if (value === undefined) return 100;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 10_000) throw new UsageError(`--limit must be a whole number from 1 to 10000, got "${value}"`);
  return n;
}

function reasonOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '' || value.length > 2_000) throw new UsageError('--reason must be a non-empty text of at most 2000 characters');
  return value;
}
