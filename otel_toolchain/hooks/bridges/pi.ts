// otel-toolchain bridge for Pi: written by `otel-toolchain hooks install pi`, removed by `hooks uninstall`.
// Hands every finished tool call to the command below (the plugin chain, with the session kept between calls),
// appends a nudge to the result the model reads, and aborts the agent's run on a stop.
import { spawn } from "node:child_process";

const COMMAND: string[] = __OTEL_TOOLCHAIN_COMMAND__;
const TIMEOUT_MS = 30000;

function warn(text: string): void {
  process.stderr.write(`otel-toolchain: ${text}\n`);
}

// The command's answer as an object ({} when it said nothing, failed or timed out: said on stderr, never thrown).
function ask(payload: unknown): Promise<any> {
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
    } catch (e) {
      warn(`cannot start ${COMMAND[0]} (${e}); the call was not checked`);
      return resolve({});
    }
    const timer = setTimeout(() => {
      warn(`no answer in ${TIMEOUT_MS} ms; the call was not checked`);
      child.kill("SIGKILL");
    }, TIMEOUT_MS);
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (err += d));
    child.stdin!.on("error", () => {}); // a command that died early: its exit says why
    child.on("error", (e) => {
      clearTimeout(timer);
      warn(`cannot start ${COMMAND[0]} (${e.message}); the call was not checked`);
      resolve({});
    });
    child.on("close", () => {
      clearTimeout(timer);
      if (err.trim()) process.stderr.write(err.endsWith("\n") ? err : err + "\n");
      try {
        resolve(out.trim() ? JSON.parse(out) : {});
      } catch {
        warn(`unreadable answer ${JSON.stringify(out.slice(0, 200))}; the call was not checked`);
        resolve({});
      }
    });
    child.stdin!.end(JSON.stringify(payload));
  });
}

export default function (pi: any) {
  const inputs = new Map<string, unknown>(); // each call's input, for the calls Pi refuses before tool_result
  const sent = new Set<string>(); // calls whose tool_result was handed over
  let stopped: string | null = null;
  const send = (event: unknown, ctx: any) =>
    ask({ event, session_id: ctx.sessionManager.getSessionId(), cwd: ctx.cwd });
  const stop = (reason: string, ctx: any) => {
    stopped = reason;
    process.stderr.write(`${reason}\n`); // the reason names otel-toolchain itself
    ctx.abort(); // returns at once; the run ends before the next model request
  };

  pi.on("tool_call", async (event: any) => {
    inputs.set(event.toolCallId, event.input);
    if (stopped) return { block: true, reason: stopped }; // a call already in flight when the run was stopped
  });
  pi.on("tool_result", async (event: any, ctx: any) => {
    sent.add(event.toolCallId);
    inputs.delete(event.toolCallId);
    const answer = await send(event, ctx);
    if (answer.continue === false) return void stop(answer.stopReason, ctx);
    const nudge = answer.hookSpecificOutput?.additionalContext;
    if (nudge) return { content: [...event.content, { type: "text", text: "\n\n" + nudge }] };
  });
  pi.on("tool_execution_end", async (event: any, ctx: any) => {
    if (sent.delete(event.toolCallId) || stopped) return; // handed over already, or blocked by the stop
    const input = inputs.get(event.toolCallId);
    inputs.delete(event.toolCallId);
    const answer = await send({ ...event, input }, ctx);
    if (answer.continue === false) stop(answer.stopReason, ctx);
  });
  pi.on("agent_end", async (_event: any, ctx: any) => {
    stopped = null; // the next prompt is a new turn
    await send({ type: "agent_end" }, ctx);
  });
  pi.on("session_shutdown", async (event: any, ctx: any) => {
    await send({ type: "session_shutdown", reason: event.reason }, ctx);
  });
}
