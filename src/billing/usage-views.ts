// The usage summary's rows as /portal/usage answers them. No imports: the dashboard's bundle
// (src/dashboard, browser types only) reads these types too.

export interface UsageRow {
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  seconds: number;
  characters: number;
  calls: number;
  cost_microcents: number;
  cost_cents: number;
}

/** One group of a usage summary: the group's key under the group_by field's name, then the totals. */
export type UsageGroupRow = UsageRow & { day?: string; model?: string; key_prefix?: string; user_id?: number; end_user?: string };
