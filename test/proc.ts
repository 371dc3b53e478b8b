// What /proc says about processes, for the tests that kill a parent and look for its children.

import { readFileSync, readdirSync } from 'node:fs';

export interface ProcStat {
  comm: string;
  /** R, S, D, Z (a zombie: dead, holding nothing, waiting for its parent to reap it)... */
  state: string;
  ppid: number;
  /** Clock ticks after boot: with the pid, names one process (pids are reused). */
  start: string;
}

/** /proc/<pid>/stat, or null when there is no such process. */
export function procStat(pid: number | 'self'): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const close = text.lastIndexOf(')'); // the command name may hold spaces and parentheses
  const fields = text.slice(close + 2).split(' '); // from field 3, the state
  return { comm: text.slice(text.indexOf('(') + 1, close), state: fields[0]!, ppid: Number(fields[1]), start: fields[19]! };
}

export interface Proc {
  pid: number;
  start: string;
  args: string[];
}

/** The running children of `parent` (zombies left out), with their arguments. */
export function childrenOf(parent: number): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(Number(name));
    if (!st || st.ppid !== parent || st.state === 'Z') continue;
    try {
      out.push({ pid: Number(name), start: st.start, args: readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Still running: the same process (pid and start time), and not a zombie. */
export function running(p: { pid: number; start: string }): boolean {
  const st = procStat(p.pid);
  return st !== null && st.start === p.start && st.state !== 'Z';
}
