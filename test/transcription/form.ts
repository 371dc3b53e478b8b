// A multipart/form-data body as the transcription endpoints take it: the recording in `file`
// (when given) and the other fields, for `call(…, {...multipartForm(fields, file)})`; a list is the
// field repeated (`key_terms[]`).
export function multipartForm(fields: Record<string, string | string[]>, file: Buffer | null): { raw: Buffer; headers: Record<string, string> } {
  const boundary = 'gatewaytestboundary';
  const parts: Buffer[] = [];
  if (file)
    parts.push(
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="call.wav"\r\ncontent-type: audio/wav\r\n\r\n`),
      file,
      Buffer.from('\r\n'),
    );
  for (const [k, values] of Object.entries(fields))
    for (const v of [values].flat()) parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { raw: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}
