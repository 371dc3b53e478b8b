// Chat chunks as the Responses API's stream events, in OpenAI's order: response.created and
// response.in_progress; for the text, output_item.added, content_part.added, output_text.delta...,
// output_text.done, content_part.done, output_item.done; for each tool call, output_item.added,
// function_call_arguments.delta..., function_call_arguments.done, output_item.done; then
// response.completed (or response.incomplete when the output cap cut it) with the usage. Every
// event carries its `sequence_number`.
import type { ChatCompletion } from './chat.ts';
import { functionCallItem, messageItem, outputText, responseObject, type ResponsesBody } from './responses.ts';
import type { ToolCall } from '../providers/types.ts';

type Event = Record<string, unknown> & { type: string };

interface OpenCall {
  call: ToolCall;
  outputIndex: number;
}

export async function* responseEvents(
  id: string,
  createdAt: number,
  model: string,
  body: ResponsesBody,
  chunks: AsyncIterable<Record<string, unknown>>,
): AsyncGenerator<Event> {
  let seq = 0;
  const ev = (type: string, fields: Record<string, unknown>): Event => ({ type, sequence_number: seq++, ...fields });
  const output: unknown[] = [];
  const msgId = `msg_${id.slice(5)}`;
  let text: string | null = null;
  let textIndex = -1;
  const calls = new Map<number, OpenCall>();
  let finish = 'stop';
  let usage: ChatCompletion['usage'] | null = null;

  yield ev('response.created', { response: responseObject(id, createdAt, model, body, []) });
  yield ev('response.in_progress', { response: responseObject(id, createdAt, model, body, []) });
  for await (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage as ChatCompletion['usage'];
    const choice = (chunk.choices as { index: number; delta: Record<string, unknown>; finish_reason: string | null }[])[0];
    if (choice?.index !== 0) continue;
    const { delta } = choice;
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (text === null) {
        text = '';
        textIndex = output.length;
        output.push(null);
        yield ev('response.output_item.added', { output_index: textIndex, item: messageItem(msgId, '', 'in_progress') });
        yield ev('response.content_part.added', { item_id: msgId, output_index: textIndex, content_index: 0, part: outputText('') });
      }
      text += delta.content;
      yield ev('response.output_text.delta', { item_id: msgId, output_index: textIndex, content_index: 0, delta: delta.content, logprobs: [] });
    }
    for (const d of (delta.tool_calls ?? []) as { index: number; id?: string; function: { name?: string; arguments?: string } }[]) {
      let open = calls.get(d.index);
      if (open === undefined) {
        open = {
          call: { id: d.id ?? `call_${d.index}`, type: 'function', function: { name: d.function.name ?? '', arguments: '' } },
          outputIndex: output.length,
        };
        output.push(null);
        calls.set(d.index, open);
        yield ev('response.output_item.added', { output_index: open.outputIndex, item: functionCallItem(open.call, 'in_progress') });
      }
      if (d.function.arguments) {
        open.call.function.arguments += d.function.arguments;
        yield ev('response.function_call_arguments.delta', { item_id: `fc_${open.call.id}`, output_index: open.outputIndex, delta: d.function.arguments });
      }
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  if (text !== null) {
    const item = messageItem(msgId, text, 'completed');
    output[textIndex] = item;
    yield ev('response.output_text.done', { item_id: msgId, output_index: textIndex, content_index: 0, text, logprobs: [] });
    yield ev('response.content_part.done', { item_id: msgId, output_index: textIndex, content_index: 0, part: item.content[0] });
    yield ev('response.output_item.done', { output_index: textIndex, item });
  }
  for (const { call, outputIndex } of calls.values()) {
    const item = functionCallItem(call, 'completed');
    output[outputIndex] = item;
    yield ev('response.function_call_arguments.done', {
      item_id: item.id,
      name: call.function.name,
      output_index: outputIndex,
      arguments: call.function.arguments,
    });
    yield ev('response.output_item.done', { output_index: outputIndex, item });
  }
  const final = responseObject(id, createdAt, model, body, output, { finish, usage: usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } });
  yield ev(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
}
