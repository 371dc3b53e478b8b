// The metered embeddings path: resolve the model, limits, count input tokens, hold, upstream, settle.
import { ApiError } from '../http/errors.ts';
import type { ApiKeyPrincipal } from '../services/keys.ts';
import { embeddingsInputItems, type EmbeddingsInput, type EmbeddingsRequest } from '../providers/types.ts';
import { countText } from './tokens.ts';
import { costMicrocents, toApiError, unservedStatus, type GatewayDeps } from './common.ts';
import type { CancelSignal } from '../providers/cancel.ts';

export interface EmbeddingsBody {
  model: string;
  input: EmbeddingsInput;
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
}

export class EmbeddingsGateway {
  constructor(private readonly deps: GatewayDeps) {}

  async embed(principal: ApiKeyPrincipal, body: EmbeddingsBody, requestId: string, signal: CancelSignal) {
    const { models, billing, router, now } = this.deps;
    const inputs = embeddingsInputItems(body.input);
    if (inputs.length === 0 || inputs.some((s) => s.length === 0)) {
      throw new ApiError('missing_input', 'input must be a non-empty text or token-id list, or a non-empty array of them.', { param: 'input' });
    }
    // Texts are counted with our tokenizer; token ids are their own count, exactly.
    const tokensOf = (item: string | number[]) => (typeof item === 'string' ? countText(item) : item.length);
    const payer = await billing.payerFor(principal);
    const model = await models.resolve(body.model, 'embedding', payer.walletId);
    this.deps.assertKyc(payer, model.requires_kyc === true);
    const counts = inputs.map(tokensOf);
    const promptTokens = counts.reduce((s, t) => s + t, 0);
    if (model.context_window !== undefined) {
      const longest = Math.max(...counts);
      if (longest > model.context_window) {
        throw new ApiError('context_length_exceeded', `An input takes ${longest} tokens; this model accepts at most ${model.context_window} per input.`, { param: 'input' });
      }
    }
    const startedAt = now();
    const hold = await billing.hold(payer, costMicrocents(model.pricing, promptTokens, 0, 'ceil'), requestId);
    const req: EmbeddingsRequest = { input: body.input };
    if (body.encoding_format) req.encoding_format = body.encoding_format;
    if (body.dimensions !== undefined) req.dimensions = body.dimensions;
    if (body.user !== undefined) req.user = this.deps.opaqueId(payer.walletId, body.user);
    const facts = { requestId, model: model._id, modelType: 'embedding', completionTokens: 0, ...(body.user !== undefined ? { endUser: body.user } : {}) };
    let served;
    try {
      served = await router.embed(this.deps.resolveRoutes(model), req, signal);
    } catch (err) {
      await billing.release(hold, payer, { ...facts, route: null, promptTokens: 0, costMicrocents: 0, status: unservedStatus(err, signal), latencyMs: now() - startedAt });
      throw toApiError(err);
    }
    // Providers validate usage at the boundary (src/providers/validate.ts): absurd counts arrive as null.
    let tokens = served.result.usage?.prompt_tokens ?? promptTokens;
    if (costMicrocents(model.pricing, tokens, 0, 'exact') > hold.amountMicrocents) tokens = promptTokens;
    await billing.settleForAnswer(hold, payer, {
      ...facts,
      route: served.route.id,
      promptTokens: tokens,
      costMicrocents: Math.min(hold.amountMicrocents, costMicrocents(model.pricing, tokens, 0, 'exact')),
      status: 'ok',
      latencyMs: now() - startedAt,
    });
    return {
      object: 'list' as const,
      data: served.result.data.map((d) => ({ object: 'embedding' as const, index: d.index, embedding: d.embedding })),
      model: model._id,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
  }
}
