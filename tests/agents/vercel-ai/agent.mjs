#!/usr/bin/env node
// A small tool-using agent on the Vercel AI SDK, for otel-toolchain's OTLP tests.
//
// It runs one generateText (or, with --stream, streamText) loop against an OpenAI-compatible model
// and records its own telemetry (ai.* spans: the run, each model call, each tool call with its
// arguments and result), exported over OTLP/HTTP protobuf as telemetry.mjs describes.
//
// Settings (environment):
//   AGENT_BASE_URL   the model API's base URL, e.g. http://127.0.0.1:PORT/v1 (required)
//   AGENT_MODEL      model name (default fake-wedge); AGENT_API_KEY (default a fake key)
//   AGENT_MAX_STEPS  the loop's step limit (default 100); AGENT_PROMPT the user prompt
// Flags: --stream (streamText instead of generateText).
//
// Stdout: one JSON line per finished tool call ({"type":"tool",...}) and a last line
// {"type":"finish",...}. Exit 0 after the model's final answer, 1 on an error, 143 on SIGTERM (after
// exporting the spans that have finished; the run's root span is still open then and is lost).
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { context } from '@opentelemetry/api';
import { generateText, stepCountIs, streamText } from 'ai';
import { flushTelemetry, startTelemetry } from './telemetry.mjs';
import { makeTools } from './tools.mjs';

const { provider: tracing, parentContext } = startTelemetry();

let stopping = false;
process.on('SIGTERM', async () => {
  if (stopping) return;
  stopping = true;
  await flushTelemetry(tracing);
  process.exit(143);
});

function emit(record) {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

function onStepFinish(step) {
  for (const part of step.content) {
    if (part.type === 'tool-result' || part.type === 'tool-error') {
      emit({
        type: 'tool', tool: part.toolName, id: part.toolCallId, input: part.input,
        ok: part.type === 'tool-result', output: part.type === 'tool-result' ? part.output : String(part.error),
      });
    }
  }
}

async function runAgent() {
  const baseURL = process.env.AGENT_BASE_URL;
  if (!baseURL) throw new Error('AGENT_BASE_URL is not set');
  const model = createOpenAICompatible({
    name: 'fake', baseURL, apiKey: process.env.AGENT_API_KEY || 'sk-fake-offline-key',
  }).chatModel(process.env.AGENT_MODEL || 'fake-wedge');
  const settings = {
    model,
    system: 'You are a build assistant. Use the tools to inspect the workspace.',
    prompt: process.env.AGENT_PROMPT || 'Check whether the build has finished and report.',
    tools: makeTools(process.cwd()),
    stopWhen: stepCountIs(Number(process.env.AGENT_MAX_STEPS || 100)),
    maxRetries: 0,
    onStepFinish,
    experimental_telemetry: {
      isEnabled: true, recordInputs: true, recordOutputs: true, functionId: 'build-check',
    },
  };
  if (process.argv.includes('--stream')) {
    const result = streamText({ ...settings, onError: ({ error }) => { throw error; } });
    // The run's root span ends when the stream is flushed, after `text` and `steps` resolve: read the
    // stream to its end first, so the span has ended before the exporter shuts down.
    await result.consumeStream();
    return { text: await result.text, steps: (await result.steps).length };
  }
  const result = await generateText(settings);
  return { text: result.text, steps: result.steps.length };
}

let code = 0;
try {
  const outcome = await context.with(parentContext, runAgent);
  emit({ type: 'finish', ...outcome });
} catch (err) {
  process.stderr.write(`agent: ${err && err.stack ? err.stack : err}\n`);
  code = 1;
}
if (!stopping) {
  await flushTelemetry(tracing);
  process.exit(code);
}
