// Loads a Chrome trace the way the DevTools Performance panel does, with
// DevTools' own trace engine (@paulirish/trace_engine, the Performance
// panel's model published on npm), and prints what it took as one JSON line.
//
// Usage: node load.mjs TRACE_ENGINE_DIR TRACE_FILE
//
// TRACE_ENGINE_DIR is the package's directory, e.g. after
//
//   npm install --prefix /tmp/te @paulirish/trace_engine@0.0.65
//
// it is /tmp/te/node_modules/@paulirish/trace_engine. Nothing is installed
// by this script. The file is read, gunzipped when compressed, parsed with
// JSON.parse and handed to TraceModel.Model.createWithAllHandlers().parse,
// as the panel's loader does; the panel's own analyze-trace.mjs supplies
// the model and the DOMRect polyfill Node lacks.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import {pathToFileURL} from 'node:url';

const [dir, file] = process.argv.slice(2);
if (!dir || !file) {
  console.error('usage: node load.mjs TRACE_ENGINE_DIR TRACE_FILE');
  process.exit(2);
}
const {analyzeEvents} = await import(pathToFileURL(path.join(dir, 'analyze-trace.mjs')).href);

const start = process.hrtime.bigint();
let buf = fs.readFileSync(file);
if (buf.length > 2 && buf[0] === 0x1f && buf[1] === 0x8b) {
  buf = zlib.gunzipSync(buf);
}
const json = JSON.parse(buf.toString('utf8'));
buf = null;
const events = json.traceEvents ?? json;
const {parsedTrace} = await analyzeEvents(events);
const ms = Number(process.hrtime.bigint() - start) / 1e6;

// What the engine found, so that a run that read nothing cannot pass.
let samples = 0;
let threads = 0;
const samplesData = parsedTrace.data?.Samples;
if (samplesData?.profilesInProcess) {
  for (const byThread of samplesData.profilesInProcess.values()) {
    for (const p of byThread.values()) {
      threads++;
      samples += p.parsedProfile?.samples?.length ?? 0;
    }
  }
}
console.log(JSON.stringify({ms, events: events.length, threads, samples, maxRSS: process.resourceUsage().maxRSS * 1024}));
