/** `leasehold --help`. */
export const USAGE = `leasehold — see and fix leasehold queues and outboxes

Usage: leasehold <command> [options]

Commands:
  migrate [--with-inbox]          create or upgrade the task and outbox tables (and the inbox)
  stats [--format prometheus]     per queue: counts by status, oldest pending age, expired leases;
                                  workflow versions in flight when it matters (several of a task,
                                  one no live worker accepts, runs that failed replay)
                                  (prometheus: the leasehold_queue_* gauges, for a textfile collector)
  watch [--interval 2s]           stats, refreshed until Ctrl-C
  dead list [--table t] [--limit 100]
                                  dead rows, oldest first, with their last error
  dead retry <ids>|--all [--table t] [--reason text]
                                  dead -> pending now, attempts reset (all or nothing)
  dead skip <ids> [--table t] [--reason text]
                                  dead -> done without running (unblocks an ordered group)
  purge --older-than 7d [--table t]
                                  delete done and cancelled rows that ended longer ago than that
  schedules [list]                recurring schedules: cron, last tick, running or paused
  schedules pause|resume <names>  pause or resume schedules (paused ticks are skipped)
  task show <id>                  a task: status, attempts, error or result, its recorded
                                  workflow steps, its children, and its timeline (steps,
                                  sleeps and waits, signals taken and pending, children)
  task fork <id> --from <step>    a new run of the workflow that keeps the steps it recorded
                                  before <step> and runs the rest (the task itself is unchanged)
  tasks [list] [--name a,b] [--status s,t] [--parent id] [--created-after t]
        [--created-before t] [--limit 50] [--after cursor]
                                  tasks newest first, a page at a time (--limit up to 1000);
                                  times are ISO 8601 or a duration ago (2h); prints the
                                  --after of the next page
  cancel <id> [--reason text]     cancel a task and its unfinished descendants (a running one
                                  is told within a heartbeat); an ended task stays as it is
  patches [--task name] [--patch id]
                                  per workflow patch (ctx.patched): unfinished runs on the new
                                  path, on the old path, and undecided; whether the old branch can go
  dashboard [--host 127.0.0.1] [--port 4100] [--token t] [--read-only]
                                  the web dashboard until Ctrl-C; any host but a loopback
                                  one needs --token (or $LEASEHOLD_DASHBOARD_TOKEN)
  worker --tasks <module|folder> [--concurrency 8] [--poll-interval 2s] [--migrate]
         [--no-listen | --listen-connection-string url] [--no-prepared-statements]
         [--shutdown-timeout 30s]
                                  run the task definitions and schedules the module (or every
                                  .js .mjs .cjs .ts .mts .cts file directly in the folder)
                                  exports, until SIGTERM/Ctrl-C: running tasks get the
                                  shutdown timeout to finish, then exit 0; --migrate runs
                                  "migrate" first (.ts files: Node.js 22.18+, or a loader:
                                  NODE_OPTIONS="--import tsx")

Ids are written task:12 or outbox:7 (as "dead list" prints them); a bare 12 means --table's,
or the only table there is. Several ids: "task:12 task:13" or "task:12,13". "task show",
"task fork" and "cancel" take one task id, 12 or task:12.

Options:
  --database-url <url>   PostgreSQL to use (default: $DATABASE_URL)
  --embedded             use a throwaway PostgreSQL instead (migrated; removed on exit)
  --schema <name>        schema of the leasehold tables (default: leasehold)
  --json                 machine-readable output on stdout
  -h, --help             this text
  --version              the CLI's version

Exit codes:
  0    done
  1    could not: database unreachable, schema not migrated, unknown or not-dead ids (no such
       task, for task show, task fork and cancel), a step task fork cannot fork from, SQL
       error; worker: a task module failed to load, defines no task, or two modules define
       one name
  2    wrong command line, or no database given
  130  interrupted (SIGINT/SIGTERM); watch, dashboard and worker exit 0 on Ctrl-C or SIGTERM
       (worker: a second signal more than 2 s later exits 130 at once)
`;
