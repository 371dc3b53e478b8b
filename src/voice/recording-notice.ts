// A recorded call's spoken notice (`recording_notice` on POST /v1/voice/call): said in the call's
// voice as soon as the media starts, before the agent's first message (and before the callee is
// answered when the first message waits for them), as an agent turn of its own on the transcript.
// It is said only when the call is recorded. The callee may talk over it: it is cut like any reply.
import type { ModelDoc } from '../models/types.ts';
import { one, replyOf, type AgentReply, type ResponseAudio } from './agent.ts';
import type { SpokenLine } from './lines.ts';

/** The notice as an agent reply (rendered once per wording and voice, kept with the replies' audio). */
export function recordingNotice(
  audio: Pick<ResponseAudio, 'render'>,
  voice: { tts: ModelDoc; voice: string; language: string },
  text: string,
): () => Promise<AgentReply> {
  return async () => {
    const line: SpokenLine = { text, audio: await audio.render(voice.tts, voice.voice, voice.language, text) };
    return replyOf(one(line));
  };
}
