// The metered embeddings path: resolve the model, limits, count input tokens, hold, upstream, settle.
import { ApiError } from '../errors.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import { embeddingsInputItems, type EmbeddingsInput, type EmbeddingsRequest } from '../providers/types.ts';
import { boundText, countText, PromptTokens } from './tokens.ts';
import { priceOfTokens } from '../billing/pricing.ts';
import type { GatewayDeps } from '../metering/endpoints.ts';
import { toApiError, unservedStatus } from '../metering/outcomes.ts';
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
    const { meter, router } = this.deps;
    const inputs = embeddingsInputItems(body.input);
    if (inputs.length === 0 || inputs.some((s) => s.length === 0)) {
      throw new ApiError('missing_input', 'input must be a non-empty text or token-id list, or a non-empty array of them.', { param: 'input' });
    }
    // Texts are counted with our tokenizer (bounded by their bytes until the exact count is needed:
    // see tokens.ts); token ids are their own count, exactly.
    const tokensOf = (item: string | number[], measure: (text: string) => number) => (typeof item === 'string' ? measure(item) : item.length);
    const call = await meter.begin(principal, {
      model: body.model,
      type: 'embedding',
      requestId,
      check: (model) => {
        const window = model.context_window;
        const longest = (measure: (text: string) => number) => Math.max(...inputs.map((item) => tokensOf(item, measure)));
        if (window !== undefined && longest(boundText) > window) {
          const tokens = longest(countText);
          if (tokens > window) {
            throw new ApiError('context_length_exceeded', `An input takes ${tokens} tokens; this model accepts at most ${window} per input.`, {
              param: 'input',
            });
          }
        }
        return new PromptTokens((measure) => inputs.reduce((s, item) => s + tokensOf(item, measure), 0));
      },
      estimate: (model, prompt) => Math.ceil(priceOfTokens(model.pricing, prompt.known, 0)),
      tokens: (prompt) => prompt.known,
      tighten: (prompt) => prompt.tighten(),
    });
    const { model, payer, checked: prompt } = call;
    const req: EmbeddingsRequest = { input: body.input };
    if (body.encoding_format) req.encoding_format = body.encoding_format;
    if (body.dimensions !== undefined) req.dimensions = body.dimensions;
    if (body.user !== undefined) req.user = this.deps.opaqueId(payer.walletId, body.user);
    const endUser = body.user !== undefined ? { endUser: body.user } : {};
    let served;
    try {
      served = await router.embed(this.deps.resolveRoutes(model), req, signal);
    } catch (err) {
      await call.release(unservedStatus(err, signal), { promptTokens: 0, completionTokens: 0, ...endUser });
      throw toApiError(err);
    }
    // Providers validate usage at the boundary (src/providers/validate.ts): absurd counts arrive as null.
    let tokens = served.result.usage?.prompt_tokens ?? prompt.exact;
    if (priceOfTokens(model.pricing, tokens, 0) > call.limitMicrocents) tokens = prompt.exact;
    await call.settle(
      {
        route: served.route.id,
        promptTokens: tokens,
        completionTokens: 0,
        costMicrocents: Math.min(call.limitMicrocents, priceOfTokens(model.pricing, tokens, 0)),
        status: 'ok',
        ...endUser,
      },
      { answer: true },
    );
    return {
      object: 'list' as const,
      data: served.result.data.map((d) => ({ object: 'embedding' as const, index: d.index, embedding: d.embedding })),
      model: model._id,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
  }
}
