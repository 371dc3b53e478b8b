// What the speech pages share: the account's models with their prices (GET /portal/models), a
// model picker, and how times and fractions of a cent are written.
import { useSession } from './context.tsx';
import { Field, useLoad } from './components.tsx';

/** A model as GET /portal/models lists it (the fields these pages read). */
export interface ModelInfo {
  id: string;
  type: string;
  languages?: string[];
  jobs?: boolean;
  diarization?: boolean;
  voices?: string[];
  max_input_chars?: number;
  pricing: { cents_per_minute?: number; cents_per_1k_chars?: number };
}

export function useModels(type: 'stt' | 'tts', filter: (m: ModelInfo) => boolean = () => true) {
  const { api } = useSession();
  return useLoad(async () => (await api.get<{ data: ModelInfo[] }>('/portal/models')).data.filter((m) => m.type === type && filter(m)), [type]);
}

export function ModelSelect({ models, value, onChange }: { models: ModelInfo[]; value: string; onChange(id: string): void }) {
  return (
    <Field label="Model">
      <select name="model" value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {models.map((m) => (
          <option key={m.id} value={m.id}>
            {m.id}
          </option>
        ))}
      </select>
    </Field>
  );
}

/** A price in cents, however small: "0.0083¢", "1.5¢". */
export const fineCents = (c: number) => `${c.toLocaleString('en-US', { maximumSignificantDigits: 3 })}¢`;

/** Seconds as a clock: "0:05.3", "1:02:03.0". */
export function clock(seconds: number): string {
  const tenths = Math.round(seconds * 10);
  const h = Math.floor(tenths / 36000);
  const m = Math.floor((tenths % 36000) / 600);
  const s = ((tenths % 600) / 10).toFixed(1).padStart(4, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}
