import { Cron } from 'croner';
import { ConfigError } from '../leasehold-error.js';

/**
 * A cron expression in a time zone, checked once: what a schedule's ticks are. Parsing, seconds
 * precision, time zones and daylight-saving transitions are croner's (a maintained library, see
 * https://croner.56k.guru): 5 fields (minute precision) or 6 (seconds first).
 */
export class CronRule {
  readonly expression: string;
  readonly timezone: string;
  readonly #cron: Cron;

  constructor(expression: unknown, timezone: unknown) {
    if (typeof expression !== 'string' || expression.trim() === '') {
      throw new ConfigError('cron', `Expected \`cron\` to be a cron expression such as '*/5 * * * *', got ${JSON.stringify(expression)}`);
    }
    if (typeof timezone !== 'string' || !isTimeZone(timezone)) {
      throw new ConfigError('timezone', `Expected \`timezone\` to be an IANA time zone such as 'Europe/Berlin' or 'UTC', got ${JSON.stringify(timezone)}`);
    }
    let cron: Cron;
    try {
      // paused: croner would otherwise start a timer of its own; we only ask it for dates
      cron = new Cron(expression, { paused: true, timezone, mode: '5-or-6-parts' });
    } catch (error) {
      throw new ConfigError('cron', `Expected \`cron\` to be a valid cron expression, got ${JSON.stringify(expression)}: ${(error as Error).message}`);
    }
    if (cron.nextRun(new Date(0)) === null) {
      throw new ConfigError('cron', `Expected \`cron\` to have ticks to come, but ${JSON.stringify(expression)} never fires`);
    }
    this.expression = expression;
    this.timezone = timezone;
    this.#cron = cron;
  }

  /** The first tick strictly after `after`, or null if there is none. */
  next(after: Date): Date | null {
    return this.#cron.nextRun(after);
  }

  /** Up to `count` ticks at or before `upTo` and strictly after `after`, latest first. */
  latest(after: Date | null, upTo: Date, count: number): Date[] {
    // previousRuns counts from strictly before its reference: start a millisecond later
    const ticks = this.#cron.previousRuns(count, new Date(upTo.getTime() + 1));
    return after === null ? ticks : ticks.filter((t) => t.getTime() > after.getTime());
  }
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
