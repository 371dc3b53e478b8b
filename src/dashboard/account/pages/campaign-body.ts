// The New campaign form's choices as the body of POST /portal/voice/batches (and of its estimate,
// which takes the same body): what is left empty is left out, so the API's defaults apply (the
// model's agent and greeting, the numbers' country's legal calling hours, the account's call limit,
// no retry). Numbers typed into the form are sent as typed when they are not numbers, so the API's
// refusal names the field.
import type { BatchCall } from './campaign-csv.ts';

export const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export const FIELD_TYPES = ['string', 'number', 'integer', 'boolean'] as const;
export const MAX_ANALYSIS_FIELDS = 20;

export interface AnalysisField {
  name: string;
  type: (typeof FIELD_TYPES)[number];
  description: string;
  /** Comma-separated allowed values; empty: any. */
  choices: string;
}

export interface CampaignForm {
  name: string;
  model: string;
  /** '' (the model's default), `intent:<model>` or `llm:<model>`. */
  agent: string;
  systemPrompt: string;
  firstMessage: string;
  /** `legal`: no window sent (the API's default); `custom`: the window below. */
  windowMode: 'legal' | 'custom';
  timeZone: string;
  days: string[];
  start: string;
  end: string;
  maxConcurrent: string;
  retryOn: string[];
  attempts: string;
  gapMinutes: string;
  analyse: boolean;
  analysisModel: string;
  summary: boolean;
  fields: AnalysisField[];
}

/** Old names Chromium's time zone data still gives for zones renamed since (both are valid IANA names). */
const RENAMED: Record<string, string> = {
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Europe/Kiev': 'Europe/Kyiv',
};
const current = (zone: string) => RENAMED[zone] ?? zone;

/** The browser's own time zone (the custom window's default), by its current name. */
export const browserTimeZone = () => current(Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');

/** The time zones to choose from, by their current names, sorted, with `selected` among them. */
export function timeZones(selected: string): string[] {
  const zones = new Set(Intl.supportedValuesOf('timeZone').map(current));
  zones.add(selected);
  return [...zones].sort();
}

export const emptyForm = (): CampaignForm => ({
  name: '',
  model: '',
  agent: '',
  systemPrompt: '',
  firstMessage: '',
  windowMode: 'legal',
  timeZone: browserTimeZone(),
  days: [...DAYS],
  start: '09:00',
  end: '21:00',
  maxConcurrent: '',
  retryOn: ['busy', 'no_answer'],
  attempts: '1',
  gapMinutes: '10',
  analyse: false,
  analysisModel: '',
  summary: true,
  fields: [],
});

/** A typed number as a number; anything else as typed (the API refuses it, naming the field). */
const numeric = (s: string): number | string => (/^\s*-?\d+(\.\d+)?\s*$/.test(s) ? Number(s) : s);

export function batchBody(f: CampaignForm, calls: BatchCall[]): Record<string, unknown> {
  const body: Record<string, unknown> = { model: f.model };
  if (f.name.trim()) body.name = f.name.trim();
  const [kind, model] = [f.agent.slice(0, f.agent.indexOf(':')), f.agent.slice(f.agent.indexOf(':') + 1)];
  if (kind === 'intent') body.agent = { type: 'intent', intent_model: model };
  if (kind === 'llm') body.agent = { type: 'llm', llm_model: model, system_prompt: f.systemPrompt };
  if (f.firstMessage.trim()) body.first_message = { text: f.firstMessage.trim() };
  if (f.windowMode === 'custom') body.window = { time_zone: f.timeZone, days: f.days, start: f.start, end: f.end };
  if (f.maxConcurrent.trim()) body.max_concurrent = numeric(f.maxConcurrent);
  const attempts = numeric(f.attempts);
  if (attempts !== 1) {
    const gap = numeric(f.gapMinutes);
    body.retry = { on: f.retryOn, max_attempts: attempts, min_gap_seconds: typeof gap === 'number' ? gap * 60 : gap };
  }
  if (f.analyse) {
    const analysis: Record<string, unknown> = { model: f.analysisModel, summary: f.summary };
    if (f.fields.length > 0)
      analysis.fields = f.fields.map((x) => {
        // A number field's allowed values are numbers; a boolean takes none.
        const choices = x.choices
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean)
          .map((c) => (x.type === 'string' ? c : numeric(c)));
        return { name: x.name.trim(), type: x.type, description: x.description, ...(choices.length > 0 && x.type !== 'boolean' ? { enum: choices } : {}) };
      });
    body.analysis = analysis;
  }
  body.calls = calls;
  return body;
}
