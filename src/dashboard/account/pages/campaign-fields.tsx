// The New campaign form's parts: the list of numbers (a CSV file read and checked in the browser,
// its rows shown before anything is sent), the calling window, the retries and the analysis.
import { useState } from 'preact/hooks';
import { Field } from '../../ui/components.tsx';
import { DataTable } from '../../ui/table.tsx';
import { RETRY_OUTCOMES } from '../../ui/constants.ts';
import { callsFromCsv, CsvError, MAX_ROWS, type CallList } from './campaign-csv.ts';
import { DAYS, FIELD_TYPES, MAX_ANALYSIS_FIELDS, timeZones, type AnalysisField, type CampaignForm } from './campaign-body.ts';
import { label } from './calls.tsx';

type Set = (patch: Partial<CampaignForm>) => void;

/** Larger than any list of 10,000 rows a person keeps in a sheet; read before it is parsed. */
const MAX_FILE_BYTES = 20 * 1024 * 1024;
const SHOWN = 100;

const toggle = (list: string[], value: string, on: boolean) => (on ? [...list.filter((v) => v !== value), value] : list.filter((v) => v !== value));

/** Picks and reads the file; `onList` gets the checked list, or null with the reason the file is refused. */
export function ListPicker({ list, onList }: { list: CallList | null; onList(list: CallList | null): void }) {
  const [error, setError] = useState<string | null>(null);
  const read = async (file: File | undefined) => {
    setError(null);
    onList(null);
    if (!file) return;
    try {
      if (file.size > MAX_FILE_BYTES) throw new CsvError(`The file is ${(file.size / 1048576).toFixed(1)} MB; a list of numbers is at most 20 MB.`);
      onList(callsFromCsv(await file.text()));
    } catch (e) {
      setError(e instanceof CsvError ? e.message : `The file could not be read: ${String(e)}`);
    }
  };
  const invalid = list?.rows.filter((r) => r.error !== null) ?? [];
  return (
    <fieldset>
      <legend>Numbers</legend>
      <Field
        label="List of numbers (CSV)"
        hint={`A header row, then one number a row (up to ${MAX_ROWS.toLocaleString('en-US')}): a "to" column (or "phone", or "number") in international form; other columns are variables the agent's wordings fill in ({{name}}); "metadata.<key>" columns are returned with the call.`}
      >
        <input type="file" name="list" accept=".csv,text/csv" onChange={(e) => void read(e.currentTarget.files?.[0])} />
      </Field>
      {error ? (
        <div class="error" role="alert" data-testid="list-error">
          <strong>{error}</strong>
        </div>
      ) : null}
      {list ? (
        <div data-testid="list-preview">
          <p role="status" data-testid="list-summary">
            {list.rows.length.toLocaleString('en-US')} rows: {list.calls.length.toLocaleString('en-US')} to call, {invalid.length.toLocaleString('en-US')}{' '}
            invalid (not sent). {list.variables.length > 0 ? `Variables: ${list.variables.join(', ')}. ` : ''}
            {list.metadata.length > 0 ? `Metadata: ${list.metadata.join(', ')}.` : ''}
          </p>
          {invalid.length > 0 ? (
            <DataTable
              caption="Invalid rows, not sent"
              testId="list-invalid"
              rows={invalid.slice(0, SHOWN)}
              rowKey={(r) => r.line}
              empty=""
              columns={[
                { label: 'Line', num: true, cell: (r) => r.line },
                { label: 'Number', cell: (r) => r.to || '—' },
                { label: 'Why', cell: (r) => r.error },
              ]}
            />
          ) : null}
          {invalid.length > SHOWN ? <p class="muted">And {(invalid.length - SHOWN).toLocaleString('en-US')} more invalid rows.</p> : null}
          <DataTable
            caption="The first rows to call"
            testId="list-valid"
            rows={list.rows.filter((r) => r.call).slice(0, 10)}
            rowKey={(r) => r.line}
            empty="No row can be called."
            columns={[
              { label: 'Line', num: true, cell: (r) => r.line },
              { label: 'Number', cell: (r) => r.to },
              ...list.variables.map((v) => ({ label: v, cell: (r: (typeof list.rows)[number]) => r.call?.variables?.[v] ?? '' })),
            ]}
          />
          {list.calls.length > 10 ? <p class="muted">The first 10 of {list.calls.length.toLocaleString('en-US')} rows to call.</p> : null}
        </div>
      ) : null}
    </fieldset>
  );
}

export function WindowFields({ f, set }: { f: CampaignForm; set: Set }) {
  return (
    <fieldset>
      <legend>Calling hours</legend>
      <label class="check">
        <input type="radio" name="window" checked={f.windowMode === 'legal'} onChange={() => set({ windowMode: 'legal' })} /> The legal hours of the numbers'
        country
      </label>
      <label class="check">
        <input type="radio" name="window" checked={f.windowMode === 'custom'} onChange={() => set({ windowMode: 'custom' })} /> My own window
      </label>
      <p class="muted">
        By default calls are placed only within the hours the law of the numbers' country allows (India: 09:00 to 21:00, India time, every day). Your own window
        must lie within those hours, else the gateway refuses it; outside the window a campaign waits for the next one.
      </p>
      {f.windowMode === 'custom' ? (
        <div class="filters">
          <Field label="Time zone">
            <select name="time_zone" value={f.timeZone} onChange={(e) => set({ timeZone: e.currentTarget.value })}>
              {timeZones(f.timeZone).map((z) => (
                <option key={z} value={z}>
                  {z}
                </option>
              ))}
            </select>
          </Field>
          <Field label="From">
            <input type="time" name="start" required value={f.start} onInput={(e) => set({ start: e.currentTarget.value })} />
          </Field>
          <Field label="Until">
            <input type="time" name="end" required value={f.end} onInput={(e) => set({ end: e.currentTarget.value })} />
          </Field>
          <fieldset>
            <legend>Days</legend>
            {DAYS.map((d) => (
              <label key={d} class="check">
                <input type="checkbox" checked={f.days.includes(d)} onChange={(e) => set({ days: toggle(f.days, d, e.currentTarget.checked) })} />{' '}
                {d[0]!.toUpperCase() + d.slice(1)}
              </label>
            ))}
          </fieldset>
        </div>
      ) : null}
    </fieldset>
  );
}

export function RetryFields({ f, set }: { f: CampaignForm; set: Set }) {
  return (
    <fieldset>
      <legend>Retries</legend>
      <div class="filters">
        <Field label="Attempts per number" hint="1: no retry; at most 10.">
          <input type="number" name="attempts" min={1} max={10} step={1} value={f.attempts} onInput={(e) => set({ attempts: e.currentTarget.value })} />
        </Field>
        <Field label="Minutes between attempts" hint="At least 1, at most 1,440.">
          <input type="number" name="gap" min={1} max={1440} step={1} value={f.gapMinutes} onInput={(e) => set({ gapMinutes: e.currentTarget.value })} />
        </Field>
      </div>
      <fieldset>
        <legend>Call again when the call was</legend>
        {RETRY_OUTCOMES.map((o) => (
          <label key={o} class="check">
            <input type="checkbox" checked={f.retryOn.includes(o)} onChange={(e) => set({ retryOn: toggle(f.retryOn, o, e.currentTarget.checked) })} />{' '}
            {label(o)}
          </label>
        ))}
      </fieldset>
    </fieldset>
  );
}

export function AnalysisFields({ f, set, llms }: { f: CampaignForm; set: Set; llms: string[] }) {
  const put = (i: number, patch: Partial<AnalysisField>) => set({ fields: f.fields.map((x, j) => (j === i ? { ...x, ...patch } : x)) });
  return (
    <fieldset>
      <legend>Analysis (optional)</legend>
      <label class="check">
        <input type="checkbox" checked={f.analyse} disabled={llms.length === 0} onChange={(e) => set({ analyse: e.currentTarget.checked })} /> After each call,
        summarize it and extract fields with an LLM (billed as a chat call)
      </label>
      {llms.length === 0 ? <p class="muted">No LLM model is active on your account.</p> : null}
      {f.analyse ? (
        <>
          <div class="filters">
            <Field label="Analysis model">
              <select name="analysis_model" value={f.analysisModel} onChange={(e) => set({ analysisModel: e.currentTarget.value })}>
                {llms.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            </Field>
            <label class="check">
              <input type="checkbox" checked={f.summary} onChange={(e) => set({ summary: e.currentTarget.checked })} /> A summary
            </label>
          </div>
          {f.fields.map((x, i) => (
            <fieldset key={i} class="filters">
              <legend>Field {i + 1}</legend>
              <Field label="Name" hint="a-z, digits and _, up to 40: the result's key and CSV column.">
                <input value={x.name} required maxLength={40} pattern="[a-z][a-z0-9_]*" onInput={(e) => put(i, { name: e.currentTarget.value })} />
              </Field>
              <Field label="Type">
                <select value={x.type} onChange={(e) => put(i, { type: e.currentTarget.value as AnalysisField['type'] })}>
                  {FIELD_TYPES.map((t) => (
                    <option key={t} value={t}>
                      {t}
                    </option>
                  ))}
                </select>
              </Field>
              <Field label="Description">
                <input value={x.description} required onInput={(e) => put(i, { description: e.currentTarget.value })} />
              </Field>
              {x.type === 'boolean' ? null : (
                <Field label="Allowed values (comma-separated, optional)">
                  <input value={x.choices} onInput={(e) => put(i, { choices: e.currentTarget.value })} />
                </Field>
              )}
              <button type="button" class="quiet" onClick={() => set({ fields: f.fields.filter((_, j) => j !== i) })}>
                Remove field {i + 1}
              </button>
            </fieldset>
          ))}
          <button
            type="button"
            disabled={f.fields.length >= MAX_ANALYSIS_FIELDS}
            onClick={() => set({ fields: [...f.fields, { name: '', type: 'string', description: '', choices: '' }] })}
          >
            Add a field
          </button>
        </>
      ) : null}
    </fieldset>
  );
}
