"""Dropping otel_toolchain into agents that are already traced.

Importing this package imports no framework: each integration is its own module, imported by
the user (``otel_toolchain.integrations.pydantic_ai`` and so on), and needs its framework.

Recognition needs no integration at all: a :class:`~otel_toolchain.Toolchain` on the tracer
provider reads the tool spans of pydantic-ai, the official GenAI instrumentations (util-genai:
LangChain, OpenAI Agents), OpenInference, OpenLLMetry/Traceloop and Claude Code's own spans. The
integrations add what spans cannot do: end the run in-process when a plugin stops the turn, and
hand a nudge to the model beside the tool result.

===================  ==============================================  ==============================
framework            how the stop ends the run                       where the nudge goes
===================  ==============================================  ==============================
pydantic-ai          ``ToolchainCapability`` raises ``TurnStopped``  ``ctx.enqueue``: a user part
                     before the next model request or tool call      right after the tool returns
LangChain/LangGraph  ``ToolchainMiddleware`` (``create_agent``) or   a second text block of the
                     ``guard_tool_call`` (``ToolNode``) raises it    ToolMessage, after the result
                     as the stopping tool call returns
OpenAI Agents SDK    ``ToolchainInputFilter`` (``RunConfig``) raises  a user input item after the
                     it before the next model call                   function call outputs
smolagents           ``ToolchainStepCallback`` raises it at the end  a paragraph after the step's
                     of the step that made the stopping call         observations
Strands              ``ToolchainHooks``: a BeforeModelCallEvent       —
                     hook raises it before the next model request
LlamaIndex           ``run_agent``: ``handler.cancel_run()`` at the    —
                     first event after the stop, then raises it
CrewAI               ``install_hooks``: before_llm_call raises         —
                     ``HookAborted``; ``kickoff`` raises it
Agno                 ``ToolchainToolHook`` raises ``StopAgentRun``     —
                     after the stopping call; ``run_agent`` raises it
Google ADK           ``before_model_callback`` raises it before the    —
                     next model request
anything else        ``Guard.check()`` / ``@guard.tool`` raise it    ``Guard.take_nudges()``
                     at the next tool call of a stopped turn
===================  ==============================================  ==============================

The caller of the agent gets :class:`otel_toolchain.TurnStopped` (its ``signal`` is the
StopSignal); the turn span ends with status ERROR and the stop event, and is exported as usual.

Content capture (repeat_guard compares arguments and results; without them it compares tool
names and failures only, and says so once in a log line and as
``otel_toolchain.turn.content_capture=off`` on the turn span):

- pydantic-ai: ``InstrumentationSettings(include_content=True)`` (the default);
- official GenAI instrumentations (util-genai):
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` (``true`` is rejected);
- OpenInference: on by default; ``OPENINFERENCE_HIDE_INPUTS``/``OPENINFERENCE_HIDE_OUTPUTS`` turn
  it off;
- OpenLLMetry/Traceloop: ``TRACELOOP_TRACE_CONTENT=true`` (the default);
- OpenAI Agents SDK, every bridge: ``RunConfig(trace_include_sensitive_data=True)`` (the default);
- Strands: always on (span events; attributes with
  ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``);
- Google ADK: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` (schema 2, off by
  default); schema 1: ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS`` (default true);
- LlamaIndex's and CrewAI's own telemetry: no setting (always recorded);
- Claude Code: ``OTEL_LOG_TOOL_DETAILS=1`` puts ``file_path`` on ``claude_code.tool``; arguments
  and results stay in its log events.
"""
