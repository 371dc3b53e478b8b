// When a batch may dial: its window (a time zone, the days of the week, a start and an end, local
// time) and the legal calling hours of the numbers' countries (one small table; India's telemarketing
// rules allow 09:00–21:00 local). Time zones through Intl.DateTimeFormat (no dependency: Node carries
// the IANA database). Pure: every function takes the instant it is asked about.
import { ApiError, echo } from '../../errors.ts';

export const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Day = (typeof DAYS)[number];

export interface BatchWindow {
  time_zone: string;
  days: Day[];
  /** "HH:MM", local time in `time_zone`. */
  start: string;
  end: string;
}

/**
 * The hours a country's numbers may be called, local time, and the time zones its numbers are in.
 * A country not listed gets DEFAULT_LEGAL_HOURS, read in the batch window's own time zone (the
 * integrator's word for where its numbers are): such a batch must give its `window`.
 */
export const LEGAL_HOURS: Record<string, { start: string; end: string; zones: string[] }> = {
  IN: { start: '09:00', end: '21:00', zones: ['Asia/Kolkata'] },
};
export const DEFAULT_LEGAL_HOURS = { start: '08:00', end: '21:00' };

const WEEKDAY: Record<string, number> = { Mon: 0, Tue: 1, Wed: 2, Thu: 3, Fri: 4, Sat: 5, Sun: 6 };
const formats = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(timeZone, f);
  }
  return f;
}

export interface LocalTime {
  y: number;
  m: number;
  d: number;
  /** Minutes since local midnight. */
  minute: number;
  second: number;
  /** 0 = Monday … 6 = Sunday. */
  weekday: number;
}

/** The wall clock in `timeZone` at instant `ms`. */
export function localTime(timeZone: string, ms: number): LocalTime {
  const parts: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(ms)) parts[p.type] = p.value;
  return {
    y: Number(parts.year),
    m: Number(parts.month),
    d: Number(parts.day),
    minute: Number(parts.hour) * 60 + Number(parts.minute),
    second: Number(parts.second),
    weekday: WEEKDAY[parts.weekday!] ?? 0,
  };
}

/** The instant the wall clock in `timeZone` reads `minute` past midnight on y-m-d (twice corrected: DST). */
export function instantOf(timeZone: string, y: number, m: number, d: number, minute: number): number {
  const wall = Date.UTC(y, m - 1, d, 0, minute);
  const offset = (at: number) => {
    const l = localTime(timeZone, at);
    return Date.UTC(l.y, l.m - 1, l.d, 0, l.minute, l.second) - Math.floor(at / 1000) * 1000;
  };
  const first = wall - offset(wall);
  return wall - offset(first);
}

export const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Whether `ms` is inside the window. */
export function inWindow(w: BatchWindow, ms: number): boolean {
  const l = localTime(w.time_zone, ms);
  return w.days.includes(DAYS[l.weekday]!) && l.minute >= minutesOf(w.start) && l.minute < minutesOf(w.end);
}

/** The window's days from the one holding `ms` on: each day's opening and closing instants. */
function* openings(w: BatchWindow, ms: number, days: number): Generator<{ open: number; close: number }> {
  const today = localTime(w.time_zone, ms);
  for (let k = 0; k < days; k++) {
    const date = new Date(Date.UTC(today.y, today.m - 1, today.d + k));
    const weekday = (date.getUTCDay() + 6) % 7;
    if (!w.days.includes(DAYS[weekday]!)) continue;
    const [y, m, d] = [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()];
    yield { open: instantOf(w.time_zone, y, m, d, minutesOf(w.start)), close: instantOf(w.time_zone, y, m, d, minutesOf(w.end)) };
  }
}

/** When the window next opens at or after `ms` (`ms` itself when open now). */
export function nextOpening(w: BatchWindow, ms: number): number {
  for (const { open, close } of openings(w, ms, 9)) {
    if (ms >= open && ms < close) return ms;
    if (open > ms) return open;
  }
  throw new Error('a window with no days never opens');
}

/** The time zone's name as Intl knows it, or 400 naming `window.time_zone`. */
function checkZone(timeZone: string): void {
  try {
    formatter(timeZone);
  } catch {
    throw new ApiError('invalid_request', `'window.time_zone' must be an IANA time zone (Asia/Kolkata), not '${echo(timeZone)}'.`, { param: 'window' });
  }
}

/**
 * The batch's window: the one given, checked (its zone known, start before end, every part of it
 * within the legal hours of every country its numbers are in, over the coming year so that daylight
 * saving is seen), or the default one: the countries' legal hours in their time zone, every day.
 */
export function settleWindow(given: BatchWindow | undefined, countries: string[], now: number): BatchWindow {
  const refuse = (why: string) => new ApiError('invalid_request', `The window ${why}.`, { param: 'window' });
  if (!given) {
    const known = countries.map((c) => ({ c, hours: LEGAL_HOURS[c] }));
    const zones = new Set(known.map((k) => k.hours?.zones.join(',')));
    const unknown = known.find((k) => k.hours?.zones.length !== 1);
    if (unknown || zones.size !== 1) {
      throw refuse(`must be given: the numbers' countries (${countries.join(', ')}) have no single default time zone and legal hours here`);
    }
    const start = known
      .map((k) => k.hours!.start)
      .sort()
      .at(-1)!;
    const end = known.map((k) => k.hours!.end).sort()[0]!;
    return { time_zone: known[0]!.hours!.zones[0]!, days: [...DAYS], start, end };
  }
  checkZone(given.time_zone);
  if (new Set(given.days).size !== given.days.length) throw refuse('names a day twice');
  if (minutesOf(given.start) >= minutesOf(given.end)) throw refuse(`must start before it ends (${given.start}–${given.end}, one day)`);
  for (const country of countries) {
    const legal = LEGAL_HOURS[country] ?? { ...DEFAULT_LEGAL_HOURS, zones: [given.time_zone] };
    const [from, to] = [minutesOf(legal.start), minutesOf(legal.end)];
    for (const zone of legal.zones) {
      for (const { open, close } of openings(given, now, 371)) {
        const [a, b] = [localTime(zone, open), localTime(zone, close)];
        if (a.minute < from || b.minute > to || a.d !== b.d) {
          throw refuse(
            `${given.start}–${given.end} ${given.time_zone} falls outside the legal calling hours of ${country} (${legal.start}–${legal.end} ${zone})`,
          );
        }
      }
    }
  }
  return { time_zone: given.time_zone, days: DAYS.filter((d) => given.days.includes(d)), start: given.start, end: given.end };
}
