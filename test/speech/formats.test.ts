import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compressionRatio, durationUsage, renderTranscript, srt, timestamp, verboseJson, vtt } from '../../src/speech/formats.ts';
import { canonicalLanguage, languageFromName, matchLanguage, primaryLanguage, sarvamLanguageCode, whisperLanguageName } from '../../src/speech/languages.ts';
import type { Transcript } from '../../src/speech/transcript.ts';

const transcript: Transcript = {
  text: 'he was not an ill disposed young man he might even have been made amiable himself',
  language: 'en',
  duration: 8.47,
  segments: [
    {
      start: 1.21,
      end: 3.8,
      text: 'he was not an ill disposed young man',
      avg_logprob: -0.4,
      words: [
        { word: 'he', start: 1.21, end: 1.33 },
        { word: 'was', start: 1.33, end: 1.55 },
      ],
    },
    { start: 3725.5, end: 3728.04, text: 'he might even have been made amiable himself', words: [{ word: 'he', start: 3725.5, end: 3725.6 }] },
  ],
};

describe('response formats', () => {
  it('json: the text and the duration used, in whole seconds rounded up', () => {
    const out = renderTranscript(transcript, { format: 'json' });
    assert.equal(out.contentType, 'application/json; charset=utf-8');
    assert.deepEqual(JSON.parse(out.body), { text: transcript.text, usage: { type: 'duration', seconds: 9 } });
    assert.deepEqual(durationUsage(9), { type: 'duration', seconds: 9 });
    assert.deepEqual(durationUsage(0.2), { type: 'duration', seconds: 1 });
  });

  it("verbose_json: Whisper's fields in Whisper's order, language as its English name, segments by default", () => {
    const out = JSON.parse(renderTranscript(transcript, { format: 'verbose_json', temperature: 0.2 }).body);
    assert.deepEqual(Object.keys(out), ['task', 'language', 'duration', 'text', 'segments', 'usage']);
    assert.equal(out.task, 'transcribe');
    assert.equal(out.language, 'english');
    assert.equal(out.duration, 8.47);
    assert.deepEqual(Object.keys(out.segments[0]), [
      'id',
      'seek',
      'start',
      'end',
      'text',
      'tokens',
      'temperature',
      'avg_logprob',
      'compression_ratio',
      'no_speech_prob',
    ]);
    assert.deepEqual(
      out.segments.map((s: { id: number }) => s.id),
      [0, 1],
    );
    assert.equal(out.segments[0].text, ' he was not an ill disposed young man');
    assert.equal(out.segments[0].seek, 0);
    assert.equal(out.segments[1].seek, 372_000, 'the 30 s window the segment starts in, in 10 ms frames');
    assert.equal(out.segments[0].temperature, 0.2);
    assert.equal(out.segments[0].avg_logprob, -0.4);
    assert.equal(out.segments[1].avg_logprob, 0);
    // zlib's header and checksum make a short text's ratio below 1, as in Whisper's own output.
    assert.equal(out.segments[0].compression_ratio, 37 / 45);
    assert.deepEqual(out.usage, { type: 'duration', seconds: 9 });
  });

  it('verbose_json: words only when asked for; segments only when asked for, if words are', () => {
    const words = verboseJson(transcript, { granularities: ['word'] });
    assert.equal(words.segments, undefined);
    assert.deepEqual(words.words, [
      { word: 'he', start: 1.21, end: 1.33 },
      { word: 'was', start: 1.33, end: 1.55 },
      { word: 'he', start: 3725.5, end: 3725.6 },
    ]);
    const both = verboseJson(transcript, { granularities: ['word', 'segment'] });
    assert.equal(both.segments?.length, 2);
    assert.equal(both.words?.length, 3);
    assert.equal(verboseJson(transcript, { granularities: [] }).words, undefined);
    assert.equal(verboseJson({ ...transcript, language: 'hi-IN' }).language, 'hindi');
    assert.equal(verboseJson({ ...transcript, language: 'od-IN' }).language, 'odia');
  });

  it('text: the transcript as plain text', () => {
    assert.deepEqual(renderTranscript(transcript, { format: 'text' }), { contentType: 'text/plain; charset=utf-8', body: `${transcript.text}\n` });
  });

  it('srt: numbered cues, comma milliseconds, hours past 99 minutes, a blank line after each', () => {
    assert.equal(
      srt(transcript),
      '1\n00:00:01,210 --> 00:00:03,800\nhe was not an ill disposed young man\n\n' +
        '2\n01:02:05,500 --> 01:02:08,040\nhe might even have been made amiable himself\n\n',
    );
    assert.equal(renderTranscript(transcript, { format: 'srt' }).contentType, 'text/plain; charset=utf-8');
  });

  it('vtt: the WEBVTT header, dot milliseconds, no cue numbers', () => {
    assert.equal(
      vtt(transcript),
      'WEBVTT\n\n00:00:01.210 --> 00:00:03.800\nhe was not an ill disposed young man\n\n' +
        '01:02:05.500 --> 01:02:08.040\nhe might even have been made amiable himself\n\n',
    );
  });

  it('an empty transcript renders as empty subtitles, not broken ones', () => {
    const empty: Transcript = { text: '', language: 'en', duration: 1.5, segments: [] };
    assert.equal(srt(empty), '');
    assert.equal(vtt(empty), 'WEBVTT\n\n');
    assert.deepEqual(verboseJson(empty).segments, []);
    assert.equal(compressionRatio(''), 0);
  });

  it('timestamps round to the millisecond and never go negative', () => {
    assert.equal(timestamp(0, ','), '00:00:00,000');
    assert.equal(timestamp(59.9996, '.'), '00:01:00.000');
    assert.equal(timestamp(-0.01, ','), '00:00:00,000');
  });
});

describe('language codes', () => {
  it("canonical BCP-47, with Sarvam's od-IN read as or-IN", () => {
    assert.equal(canonicalLanguage('HI-in'), 'hi-IN');
    assert.equal(canonicalLanguage('od-IN'), 'or-IN');
    assert.equal(canonicalLanguage('hi-latn-in'), 'hi-Latn-IN');
    assert.equal(canonicalLanguage('kok-IN'), 'kok-IN');
    assert.equal(canonicalLanguage('english'), null);
    assert.equal(canonicalLanguage('hi_IN'), null);
    assert.equal(sarvamLanguageCode('or-IN'), 'od-IN');
    assert.equal(sarvamLanguageCode('od-IN'), 'od-IN');
    assert.equal(sarvamLanguageCode('hi-IN'), 'hi-IN');
  });

  it('ISO-639-1 and Whisper names', () => {
    assert.equal(primaryLanguage('ta-IN'), 'ta');
    assert.equal(primaryLanguage('od-IN'), 'or');
    assert.deepEqual(['hi-IN', 'en-IN', 'ta-IN', 'te-IN', 'kn-IN', 'ml-IN', 'mr-IN', 'gu-IN', 'bn-IN', 'pa-IN', 'or-IN', 'as-IN'].map(whisperLanguageName), [
      'hindi',
      'english',
      'tamil',
      'telugu',
      'kannada',
      'malayalam',
      'marathi',
      'gujarati',
      'bengali',
      'punjabi',
      'odia',
      'assamese',
    ]);
    assert.equal(whisperLanguageName('jv'), 'javanese');
    assert.equal(whisperLanguageName('xx'), null);
    assert.equal(languageFromName('Hindi'), 'hi');
    assert.equal(languageFromName('odia'), 'or');
    assert.equal(languageFromName('javanese'), 'jv');
  });

  it("matches a request against a model's languages", () => {
    const indic = ['hi-IN', 'en-IN', 'or-IN', 'ta-IN'];
    assert.equal(matchLanguage('hi-IN', indic), 'hi-IN');
    assert.equal(matchLanguage('hi', indic), 'hi-IN');
    assert.equal(matchLanguage('od-IN', indic), 'or-IN');
    assert.equal(matchLanguage('or', indic), 'or-IN');
    assert.equal(matchLanguage('Tamil', indic), 'ta-IN');
    assert.equal(matchLanguage('fr', indic), null);
    assert.equal(matchLanguage('not a code!', indic), null);
    assert.equal(matchLanguage('en-GB', ['en-US']), 'en-US', 'one English model takes any English');
    // A bare language is the model's default region for it: the first it lists (OpenAI's `en`).
    assert.equal(matchLanguage('en', ['en-IN', 'en-US']), 'en-IN', 'bare: the first listed');
    assert.equal(matchLanguage('EN', ['hi-IN', 'en-US', 'en-IN', 'en-GB']), 'en-US');
    assert.equal(matchLanguage('english', ['en-US', 'en-IN']), 'en-US', 'a Whisper name is a bare language');
    assert.equal(matchLanguage('en-US', ['en-IN', 'en-US']), 'en-US');
    assert.equal(matchLanguage('en-AU', ['en-IN', 'en-US']), null, 'a region the model lacks, among several: not guessed');
    assert.equal(matchLanguage('hi', ['hi-IN', 'hi-Latn-IN']), 'hi-IN');
    assert.equal(matchLanguage('hi', ['hi-Latn-IN', 'hi-IN']), 'hi-IN', 'a plain tag before a script variant');
    assert.equal(matchLanguage('hi', ['hi-Latn-IN', 'hi-Deva-IN']), 'hi-Latn-IN');
  });
});
