// otel-toolchain bridge for OpenCode: written by `otel-toolchain hooks install opencode`, removed by `hooks uninstall`.
// Hands every finished tool call to the command below (the plugin chain, with the session kept between calls),
// appends a nudge to the output the model reads, and ends the session's run on a stop. Nothing in it may fail
// the agent: every failure is said on standard error and the call goes unchecked.
import { spawn, spawnSync } from "node:child_process"

const COMMAND = __OTEL_TOOLCHAIN_COMMAND__
const TIMEOUT_MS = Number(process.env.OTEL_TOOLCHAIN_HOOK_TIMEOUT_MS) || 30000 // how long a call waits for an answer
const ABORTED = "Tool execution aborted" // the parts our own abort leaves: not calls of the turn

function warn(text) {
  process.stderr.write(`otel-toolchain: ${text}\n`)
}

function answerOf(text) {
  try {
    const answer = text.trim() ? JSON.parse(text) : {}
    return answer && typeof answer === "object" && !Array.isArray(answer) ? answer : {}
  } catch {
    warn(`unreadable answer ${JSON.stringify(text.slice(0, 200))}; the call was not checked`)
    return {}
  }
}

// The command's answer, without blocking the event loop; {} when it said nothing, failed or timed out.
function ask(payload) {
  return new Promise((resolve) => {
    let out = ""
    let err = ""
    let timer = null
    let settled = false
    const settle = (answer) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(answer)
    }
    let child
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "pipe"] })
    } catch (e) {
      warn(`cannot start ${COMMAND[0]} (${e}); the call was not checked`)
      return settle({})
    }
    timer = setTimeout(() => {
      warn(`no answer in ${TIMEOUT_MS} ms; the call was not checked`)
      child.kill("SIGKILL")
      child.stdout.destroy() // a process the command left behind may hold them open: it must not hold the agent
      child.stderr.destroy()
      settle({})
    }, TIMEOUT_MS)
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (err += d))
    child.stdin.on("error", () => {}) // a command that died early: its exit says why
    child.on("error", (e) => {
      warn(`cannot start ${COMMAND[0]} (${e.message}); the call was not checked`)
      settle({})
    })
    child.on("close", () => {
      if (settled) return
      if (err.trim()) process.stderr.write(err.endsWith("\n") ? err : err + "\n")
      settle(answerOf(out))
    })
    try {
      child.stdin.end(JSON.stringify(payload))
    } catch (e) {
      warn(`cannot hand the call over (${e}); the call was not checked`)
      settle({})
    }
  })
}

// The same, blocking: for what must be done before `opencode run` exits, which it does without waiting for an
// event handler's pending work (the end of a turn, a call that only the event hook sees, the process's exit).
function askNow(payload) {
  let done
  try {
    done = spawnSync(COMMAND[0], COMMAND.slice(1), { input: JSON.stringify(payload), timeout: TIMEOUT_MS })
  } catch (e) {
    warn(`cannot hand the event over (${e})`)
    return {}
  }
  if (done.error) {
    warn(`${COMMAND[0]} failed (${done.error.message}); the event was not checked`)
    return {}
  }
  if (done.stderr?.length) process.stderr.write(done.stderr)
  return answerOf(String(done.stdout ?? ""))
}

export const OtelToolchain = async ({ client }) => {
  // Installed in both the project's and the user's folder, only the first copy loaded acts.
  if (globalThis.__otelToolchainBridge) return {}
  globalThis.__otelToolchainBridge = true
  const sessions = new Set() // the sessions this process saw: ended when it exits (OpenCode says so nowhere else)
  process.on("exit", () => sessions.forEach((sessionID) => askNow({ hook: "exit", sessionID })))
  const stop = (sessionID, reason) => {
    process.stderr.write(`${reason || "otel-toolchain: stopped"}\n`) // the reason names otel-toolchain itself
    // Deferred: aborting inside the hook would turn this very call into an aborted one.
    setTimeout(() => {
      try {
        client.session.abort({ path: { id: sessionID } }).catch((e) => warn(`abort failed: ${e}`))
      } catch (e) {
        warn(`abort failed: ${e}`)
      }
    }, 0)
  }
  return {
    "tool.execute.after": async (input, output) => {
      try {
        sessions.add(input.sessionID)
        const answer = await ask({ hook: "tool.execute.after", input, output, cwd: process.cwd() })
        const nudge = answer.hookSpecificOutput?.additionalContext
        if (typeof nudge === "string" && typeof output.output === "string") output.output += "\n\n" + nudge
        if (answer.continue === false) stop(input.sessionID, answer.stopReason)
      } catch (e) {
        warn(`bridge failed (${e}); the call was not checked`)
      }
    },
    event: async ({ event }) => {
      try {
        const ends = event.type === "session.idle" || event.type === "session.deleted"
        const part = event.type === "message.part.updated" ? event.properties?.part : null
        const failedTool = part?.type === "tool" && part.state?.status === "error" && part.state.error !== ABORTED
        if (!ends && !failedTool) return
        if (failedTool) sessions.add(part.sessionID)
        const answer = askNow({ hook: "event", event, cwd: process.cwd() })
        if (failedTool && answer.continue === false) stop(part.sessionID, answer.stopReason)
      } catch (e) {
        warn(`bridge failed (${e}); the event was not checked`)
      }
    },
  }
}
