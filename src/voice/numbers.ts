// The phone numbers inbound calls come in on (issue 41 §4): the one owner of the `voice_numbers`
// collection. An operator assigns a number (PUT /admin/voice/numbers/{number},
// src/http/routes/admin-voice-numbers.ts) to a voice model and an account: the model's carrier
// route receives the number's calls (Twilio's incoming-call webhook, Exotel's flow, the simulator),
// the account pays for them, and the number's agent, first message, language and voice answer them
// (src/voice/inbound.ts). The number is the record's `_id` (E.164; an ExoPhone written `0…` is
// stored as its +91 form), so a number belongs to one model and one account only.
import { ApiError, echo } from '../errors.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import { callerIdE164, validCallerId } from '../shared/phones.ts';
import type { Store } from '../store/port.ts';
import type { VoiceCallBody } from './checks.ts';

/** The account a number's calls are billed to. */
export interface NumberOwner {
  type: 'user' | 'org';
  id: number;
}

/** What the operator sets on a number: its model and owner, and how its calls are answered (a call's own fields, as POST /v1/voice/call takes them). */
export interface NumberSettings extends Pick<VoiceCallBody, 'agent' | 'first_message' | 'language' | 'voice' | 'max_duration_seconds' | 'webhook_id'> {
  model: string;
  owner: NumberOwner;
}

interface NumberDoc extends NumberSettings {
  _id: string;
  created_at: Date;
  updated_at: Date;
  [k: string]: unknown;
}

/** A number as the admin API answers it. */
export type VoiceNumber = NumberSettings & { number: string; created_at: number; updated_at: number };

const view = (d: NumberDoc): VoiceNumber => {
  const { _id, created_at, updated_at, ...settings } = d;
  return { number: _id, ...settings, created_at: Math.floor(created_at.getTime() / 1000), updated_at: Math.floor(updated_at.getTime() / 1000) };
};

export interface VoiceNumbersDeps {
  store: Store;
  models: Pick<ModelCatalog, 'get'>;
  /** Whether the account exists (identity's). */
  accountExists(owner: NumberOwner): Promise<boolean>;
  now(): number;
}

export class VoiceNumbers {
  private readonly numbers;

  constructor(private readonly deps: VoiceNumbersDeps) {
    this.numbers = deps.store.collection<NumberDoc>('voice_numbers');
  }

  /** The number's record as stored, or null (`number` in either form an ExoPhone is written). */
  async get(number: string): Promise<VoiceNumber | null> {
    const doc = await this.numbers.findOne({ _id: callerIdE164(number) });
    return doc ? view(doc) : null;
  }

  async list(limit = 1000): Promise<VoiceNumber[]> {
    return (await this.numbers.find({}, { sort: { _id: 1 }, limit })).map(view);
  }

  /** The numbers an account owns (the portal's read-only view: an account sees its own, never another's), by number. */
  async ownedBy(owner: NumberOwner, limit = 1000): Promise<VoiceNumber[]> {
    return (await this.numbers.find({ 'owner.type': owner.type, 'owner.id': owner.id }, { sort: { _id: 1 }, limit })).map(view);
  }

  /** Assigns (or re-assigns) a number: its model must be a voice model, its owner an account. */
  async put(number: string, settings: NumberSettings): Promise<{ number: VoiceNumber; created: boolean }> {
    if (!validCallerId(number))
      throw new ApiError('invalid_request', `'${echo(number)}' is not a valid phone number (E.164, or an ExoPhone as 0XXXXXXXXXX).`, { param: 'number' });
    const model = await this.deps.models.get(settings.model);
    if (model?.type !== 'voice') throw new ApiError('invalid_request', `'model' must be a voice model, not '${echo(settings.model)}'.`, { param: 'model' });
    if (!(await this.deps.accountExists(settings.owner)))
      throw new ApiError('invalid_request', `No ${settings.owner.type} ${settings.owner.id} to own the number.`, { param: 'owner' });
    const _id = callerIdE164(number);
    const now = new Date(this.deps.now());
    const found = await this.numbers.findOne({ _id });
    const doc: NumberDoc = { ...settings, _id, created_at: found?.created_at ?? now, updated_at: now };
    await this.numbers.replaceOne({ _id }, doc, { upsert: true });
    return { number: view(doc), created: found === null };
  }

  async remove(number: string): Promise<boolean> {
    return (await this.numbers.deleteOne({ _id: callerIdE164(number) })).deletedCount > 0;
  }
}
