// otel-toolchain bridge for OpenCode: written by `otel-toolchain hooks install opencode`, removed by `hooks uninstall`.
// Hands every finished tool call to the command below (the plugin chain, with the session kept between calls),
// appends a nudge to the output the model reads, and ends the session's run on a stop.
import { spawn, spawnSync } from "node:child_process"

const COMMAND = __OTEL_TOOLCHAIN_COMMAND__
const TIMEOUT_MS = 30000
const ABORTED = "Tool execution aborted" // the parts our own abort leaves: not calls of the turn

function warn(text) {
  process.stderr.write(`otel-toolchain: ${text}\n`)
}

// The command's answer as an object ({} when it said nothing, failed or timed out: said on stderr, never thrown).
function ask(payload) {
  return new Promise((resolve) => {
    let out = ""
    let err = ""
    let child
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "pipe"] })
    } catch (e) {
      warn(`cannot start ${COMMAND[0]} (${e}); the call was not checked`)
      return resolve({})
    }
    const timer = setTimeout(() => {
      warn(`no answer in ${TIMEOUT_MS} ms; the call was not checked`)
      child.kill("SIGKILL")
    }, TIMEOUT_MS)
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (err += d))
    child.stdin.on("error", () => {}) // a command that died early: its exit says why
    child.on("error", (e) => {
      clearTimeout(timer)
      warn(`cannot start ${COMMAND[0]} (${e.message}); the call was not checked`)
      resolve({})
    })
    child.on("close", () => {
      clearTimeout(timer)
      if (err.trim()) process.stderr.write(err.endsWith("\n") ? err : err + "\n")
      try {
        resolve(out.trim() ? JSON.parse(out) : {})
      } catch {
        warn(`unreadable answer ${JSON.stringify(out.slice(0, 200))}; the call was not checked`)
        resolve({})
      }
    })
    child.stdin.end(JSON.stringify(payload))
  })
}

// The same, blocking: for the end of a turn, after which `opencode run` exits without waiting for pending work.
function askNow(payload) {
  const done = spawnSync(COMMAND[0], COMMAND.slice(1), { input: JSON.stringify(payload), timeout: TIMEOUT_MS })
  if (done.error) warn(`${COMMAND[0]} failed (${done.error.message}); the turn's report was not made`)
  else if (done.stderr?.length) process.stderr.write(done.stderr)
}

export const OtelToolchain = async ({ client }) => {
  const sessions = new Set() // the sessions this process saw: ended when it exits (OpenCode says so nowhere else)
  process.on("exit", () => sessions.forEach((sessionID) => askNow({ hook: "exit", sessionID })))
  const stop = (sessionID, reason) => {
    process.stderr.write(`${reason}\n`) // the reason names otel-toolchain itself
    // Deferred: aborting inside the hook would turn this very call into an aborted one.
    setTimeout(() => client.session.abort({ path: { id: sessionID } }).catch((e) => warn(`abort failed: ${e}`)), 0)
  }
  return {
    "tool.execute.after": async (input, output) => {
      sessions.add(input.sessionID)
      const answer = await ask({ hook: "tool.execute.after", input, output, cwd: process.cwd() })
      const nudge = answer.hookSpecificOutput?.additionalContext
      if (nudge && typeof output.output === "string") output.output += "\n\n" + nudge
      if (answer.continue === false) stop(input.sessionID, answer.stopReason)
    },
    event: async ({ event }) => {
      const part = event.type === "message.part.updated" ? event.properties?.part : null
      const failedTool = part?.type === "tool" && part.state?.status === "error" && part.state.error !== ABORTED
      if (event.type === "session.idle" || event.type === "session.deleted") return askNow({ hook: "event", event })
      if (!failedTool) return
      const answer = await ask({ hook: "event", event, cwd: process.cwd() })
      if (answer.continue === false) stop(part.sessionID, answer.stopReason)
    },
  }
}
