import { readdir, stat } from 'node:fs/promises';
import { extname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isScheduleDefinition, isTaskDefinition, type ScheduleDefinition, type TaskDefinition } from '@leasehold/core';
import { CommandError, UsageError } from './errors.js';

/** What `leasehold worker --tasks` found in the modules. */
export interface LoadedTasks {
  /** Every task type to run: the exported ones, and those of exported schedules. */
  readonly tasks: readonly TaskDefinition<unknown, unknown>[];
  readonly schedules: readonly ScheduleDefinition<unknown>[];
  /** The modules loaded, relative to the working directory. */
  readonly files: readonly string[];
}

/** Module files `--tasks` loads; TypeScript ones need Node.js 22.18+ or a loader such as tsx. */
export const MODULE_EXTENSIONS = ['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts'] as const;

// in a folder: declarations, tests and dotfiles are not task modules (a test file would run its tests)
const SKIPPED = /^\.|\.d\.[mc]?ts$|\.(test|spec)\.[mc]?[jt]s$/;

/**
 * Loads the module `path` names, or every module file directly in the folder it names (in name
 * order, not recursing), and collects what they export: definitions made by `defineTask` and
 * `defineSchedule`, as named exports, in an exported array, or as the values of the default
 * export's object (CommonJS `module.exports = { … }`). One definition exported under several
 * names counts once; two definitions of one name are refused.
 */
export async function loadTaskModules(path: string, cwd = process.cwd()): Promise<LoadedTasks> {
  const files = await moduleFiles(resolve(cwd, path), path);
  const found = new Collected();
  for (const file of files) {
    const where = relative(cwd, file) || file;
    for (const [name, value] of Object.entries(await importModule(file, where))) found.add(value, where, name, name === 'default');
  }
  return { ...found.result(path), files: files.map((f) => relative(cwd, f) || f) };
}

async function moduleFiles(absolute: string, typed: string): Promise<string[]> {
  const info = await stat(absolute).catch(() => undefined);
  if (info === undefined) throw new UsageError(`--tasks: no such file or folder: ${typed}`);
  if (info.isFile()) {
    if (!(MODULE_EXTENSIONS as readonly string[]).includes(extname(absolute))) {
      throw new UsageError(`--tasks: ${typed} is not a module file (${MODULE_EXTENSIONS.join(', ')}) or a folder`);
    }
    return [absolute];
  }
  const names = (await readdir(absolute, { withFileTypes: true }))
    .filter((e) => e.isFile() && (MODULE_EXTENSIONS as readonly string[]).includes(extname(e.name)) && !SKIPPED.test(e.name))
    .map((e) => e.name)
    .sort();
  if (names.length === 0) throw new CommandError(`no module files in ${typed} (looked for ${MODULE_EXTENSIONS.join(', ')} directly in it)`);
  return names.map((name) => join(absolute, name));
}

async function importModule(file: string, where: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    const e = error as { code?: string; message?: string; stack?: string };
    if (e.code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[mc]?ts$/.test(file)) {
      throw new CommandError(
        `cannot load ${where}: this Node.js (${process.version}) does not run TypeScript by itself. Run the CLI under a loader ` +
          `(NODE_OPTIONS="--import tsx" npx leasehold worker …), use Node.js 22.18 or newer, or point --tasks at the compiled JavaScript`,
      );
    }
    // the user's code failed: where in it matters as much as what
    const all = (e.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
    const own = all.filter((line) => line.includes(file) || line.includes(pathToFileURL(file).href));
    const frames = (own.length > 0 ? own : all).slice(0, 3).join('\n');
    throw new CommandError(`cannot load ${where}: ${e.message ?? String(error)}${frames ? `\n${frames}` : ''}`);
  }
}

/** Definitions by name, with where each came from; refuses a second definition of a name. */
class Collected {
  readonly #tasks = new Map<string, { definition: TaskDefinition<unknown, unknown>; where: string }>();
  readonly #schedules = new Map<string, { definition: ScheduleDefinition<unknown>; where: string }>();

  /** Takes `value` if it is a definition, or an array of them, or (`unwrap`) an object of them. */
  add(value: unknown, file: string, exported: string, unwrap: boolean): void {
    if (isTaskDefinition(value)) return void this.#put(this.#tasks, 'task', value, `${file} (export ${exported})`);
    if (isScheduleDefinition(value)) return void this.#put(this.#schedules, 'schedule', value, `${file} (export ${exported})`);
    if (Array.isArray(value)) value.forEach((v: unknown, i) => this.add(v, file, `${exported}[${i}]`, false));
    // one level only: the default export's (module.exports') values, not every object anywhere
    else if (unwrap && typeof value === 'object' && value !== null) {
      for (const [key, v] of Object.entries(value)) this.add(v, file, `${exported}.${key}`, false);
    }
  }

  #put<D extends { readonly name: string }>(map: Map<string, { definition: D; where: string }>, kind: string, definition: D, where: string): void {
    const seen = map.get(definition.name);
    if (seen === undefined) map.set(definition.name, { definition, where });
    else if (seen.definition !== definition) {
      throw new CommandError(`${kind} "${definition.name}" is defined twice: in ${seen.where} and in ${where}; each ${kind} name must be defined once`);
    }
  }

  result(path: string): Pick<LoadedTasks, 'tasks' | 'schedules'> {
    // a schedule's task runs here too, exported or not: a schedule alone is a complete program
    for (const { definition, where } of this.#schedules.values()) this.#put(this.#tasks, 'task', definition.task, `${where}'s task`);
    if (this.#tasks.size === 0) {
      throw new CommandError(
        `no task definitions in ${path}: export what defineTask() returns (e.g. "export const sendEmail = defineTask('send-email', { handler })")`,
      );
    }
    return { tasks: [...this.#tasks.values()].map((t) => t.definition), schedules: [...this.#schedules.values()].map((s) => s.definition) };
  }
}
