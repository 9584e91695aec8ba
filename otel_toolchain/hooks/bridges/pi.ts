// otel-toolchain bridge for Pi: written by `otel-toolchain hooks install pi`, removed by `hooks uninstall`.
// Hands every finished tool call to the command below (the plugin chain, with the session kept between calls),
// appends a nudge to the result the model reads, and aborts the agent's run on a stop. Nothing in it may fail
// the agent: every failure is said on standard error and the call goes unchecked.
import { spawn } from "node:child_process";

const COMMAND: string[] = __OTEL_TOOLCHAIN_COMMAND__;
const TIMEOUT_MS = Number(process.env.OTEL_TOOLCHAIN_HOOK_TIMEOUT_MS) || 30000; // how long a call waits for an answer

function warn(text: string): void {
  process.stderr.write(`otel-toolchain: ${text}\n`);
}

function answerOf(text: string): any {
  try {
    const answer = text.trim() ? JSON.parse(text) : {};
    return answer && typeof answer === "object" && !Array.isArray(answer) ? answer : {};
  } catch {
    warn(`unreadable answer ${JSON.stringify(text.slice(0, 200))}; the call was not checked`);
    return {};
  }
}

// The command's answer, without blocking the event loop; {} when it said nothing, failed or timed out.
function ask(payload: unknown): Promise<any> {
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    let timer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    const settle = (answer: any) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
    } catch (e) {
      warn(`cannot start ${COMMAND[0]} (${e}); the call was not checked`);
      return settle({});
    }
    timer = setTimeout(() => {
      warn(`no answer in ${TIMEOUT_MS} ms; the call was not checked`);
      child.kill("SIGKILL");
      child.stdout!.destroy(); // a process the command left behind may hold them open: it must not hold the agent
      child.stderr!.destroy();
      settle({});
    }, TIMEOUT_MS);
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (err += d));
    child.stdin!.on("error", () => {}); // a command that died early: its exit says why
    child.on("error", (e) => {
      warn(`cannot start ${COMMAND[0]} (${e.message}); the call was not checked`);
      settle({});
    });
    child.on("close", () => {
      if (settled) return;
      if (err.trim()) process.stderr.write(err.endsWith("\n") ? err : err + "\n");
      settle(answerOf(out));
    });
    try {
      child.stdin!.end(JSON.stringify(payload));
    } catch (e) {
      warn(`cannot hand the call over (${e}); the call was not checked`);
      settle({});
    }
  });
}

export default function (pi: any) {
  // Installed in both the project's and the user's folder, only the first copy loaded acts.
  if ((globalThis as any).__otelToolchainBridge) return;
  (globalThis as any).__otelToolchainBridge = true;
  const inputs = new Map<string, unknown>(); // each call's input, for the calls Pi refuses before tool_result
  const sent = new Set<string>(); // calls whose tool_result was handed over
  const pending = new Set<Promise<any>>(); // what was handed over and not yet answered
  let stopped: string | null = null;
  const send = (event: unknown, ctx: any): Promise<any> => {
    const answer = ask({ event, session_id: ctx.sessionManager.getSessionId(), cwd: ctx.cwd });
    pending.add(answer);
    answer.finally(() => pending.delete(answer));
    return answer;
  };
  // An end is handed over after every call before it: Pi does not wait for one event's handlers before the next.
  const sendLast = async (event: unknown, ctx: any) => {
    await Promise.all([...pending]);
    await send(event, ctx);
  };
  const stop = (reason: string | undefined, ctx: any) => {
    stopped = reason || "otel-toolchain: stopped";
    process.stderr.write(`${stopped}\n`); // the reason names otel-toolchain itself
    ctx.abort(); // returns at once; the run ends before the next model request
  };
  const guarded = (what: string, handler: (event: any, ctx: any) => Promise<any>) =>
    async (event: any, ctx: any) => {
      try {
        return await handler(event, ctx);
      } catch (e) {
        warn(`bridge failed on ${what} (${e}); it was not checked`);
      }
    };

  pi.on("tool_call", guarded("tool_call", async (event) => {
    inputs.set(event.toolCallId, event.input);
    if (stopped) return { block: true, reason: stopped }; // a call already in flight when the run was stopped
  }));
  pi.on("tool_result", guarded("tool_result", async (event, ctx) => {
    sent.add(event.toolCallId);
    inputs.delete(event.toolCallId);
    const answer = await send(event, ctx);
    if (answer.continue === false) return void stop(answer.stopReason, ctx);
    const nudge = answer.hookSpecificOutput?.additionalContext;
    if (typeof nudge === "string") return { content: [...event.content, { type: "text", text: "\n\n" + nudge }] };
  }));
  pi.on("tool_execution_end", guarded("tool_execution_end", async (event, ctx) => {
    if (sent.delete(event.toolCallId) || stopped) return; // handed over already, or blocked by the stop
    const input = inputs.get(event.toolCallId);
    inputs.delete(event.toolCallId);
    const answer = await send({ ...event, input }, ctx);
    if (answer.continue === false) stop(answer.stopReason, ctx);
  }));
  pi.on("agent_end", guarded("agent_end", async (_event, ctx) => {
    stopped = null; // the next prompt is a new turn
    await sendLast({ type: "agent_end" }, ctx);
  }));
  pi.on("session_shutdown", guarded("session_shutdown", async (event, ctx) => {
    await sendLast({ type: "session_shutdown", reason: event.reason }, ctx);
  }));
}
