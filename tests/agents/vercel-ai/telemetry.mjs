// OpenTelemetry set-up of the agent: a Node tracer provider that batches spans and sends them as
// OTLP/HTTP protobuf. Everything is configured by the standard variables:
//   OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the exporter reads them),
//   OTEL_BSP_SCHEDULE_DELAY (the batch processor reads it; 200 ms here when it is unset, so a
//   receiver sees each finished call within a fraction of a second), OTEL_SERVICE_NAME and
//   OTEL_RESOURCE_ATTRIBUTES (the env resource detector), TRACEPARENT (the run's root span nests
//   under the caller's span when it is set).
import { ROOT_CONTEXT, propagation } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

const DEFAULT_DELAY_MS = 200;

/** Start tracing; returns { provider, parentContext } (parentContext holds TRACEPARENT, if any). */
export function startTelemetry() {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'vercel-ai-agent' }))
    .merge(detectResources({ detectors: [envDetector] }));
  const batch = process.env.OTEL_BSP_SCHEDULE_DELAY ? {} : { scheduledDelayMillis: DEFAULT_DELAY_MS };
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(), batch)],
  });
  provider.register();
  const carrier = {};
  if (process.env.TRACEPARENT) carrier.traceparent = process.env.TRACEPARENT;
  if (process.env.TRACESTATE) carrier.tracestate = process.env.TRACESTATE;
  return { provider, parentContext: propagation.extract(ROOT_CONTEXT, carrier) };
}

/**
 * Export what has finished and shut down, within `limitMs` (a dead receiver must not keep the
 * process alive). Never throws.
 */
export async function flushTelemetry(provider, limitMs = 5000) {
  let timer;
  const limit = new Promise((resolve) => { timer = setTimeout(resolve, limitMs); });
  try {
    await Promise.race([provider.shutdown(), limit]);
  } catch (err) {
    process.stderr.write(`agent: telemetry flush failed: ${err}\n`);
  } finally {
    clearTimeout(timer);
  }
}
