
À
É

env
dev

service.version	
0.171.0
%
telemetry.sdk.name
opentelemetry

	host.name
vm

service.name

codex_exec
 
telemetry.sdk.language
rust
!
telemetry.sdk.version
0.31.0r

codex_otel::metrics::clientQDEBUG*
flushing OTEL metricsY@»Þzfíb$event otel/src/metrics/client.rs:330