// A node:test reporter for scripts/run-tests.mjs: how long each test file's top-level tests took
// (ms, one JSON object keyed by file), so that the next run starts the slowest files first.
export default async function* durations(source) {
  const byFile = {};
  for await (const event of source) {
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0 && event.data.file) {
      byFile[event.data.file] = (byFile[event.data.file] ?? 0) + (event.data.details?.duration_ms ?? 0);
    }
  }
  yield JSON.stringify(byFile);
}
