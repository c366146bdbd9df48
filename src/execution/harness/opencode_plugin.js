// orange's plugin for opencode (written by orange into the config directory it owns for
// one task, OPENCODE_CONFIG_DIR; never the user's own). It tells orange what opencode
// does: each event below runs `orange hook agent opencode.<event>` with the event's
// properties as JSON on standard input, one at a time and in order (a burst of
// busy/idle must not land reversed). Sub-agent sessions (a parentID) are not the task's
// conversation: their events are left out. opencode 1.18 follows a session.error with
// session.status idle and session.idle at once: those are left out too until the next
// busy, so the error stays what orange sees. Nothing here may break opencode: every
// failure is swallowed.
//
// opencode 1.18 ends a turn with session.status busy, session.status idle and session.idle
// within ≈ 70 ms, and one hook process takes tenths of a second or more on a loaded
// machine: sent one by one, the idle waited behind a busy that said nothing new. So an
// event that says only a state (busy or idle: session.status busy/idle, session.idle,
// tool.execute.before) and still waits gives way to a newer one of its session, and one
// that says what was last sent is not sent. Events that carry more (the conversation id, a
// prompt, a tool's end, a permission, a question, an error, a retry) are always sent, in
// order.
import { spawn } from "node:child_process"
import { readFileSync, unlinkSync } from "node:fs"
import { join } from "node:path"

const FORWARD = new Set([
  "session.created",
  "session.status",
  "session.idle",
  "session.error",
  "permission.asked",
  "permission.replied",
  "question.asked",
  "question.replied",
  "question.rejected",
])

// What each event (besides session.status) says of the turn, as orange reads it
// (src/execution/harness/opencode.rs): an answered permission or question goes on working.
const SAYS = {
  "session.created": "idle",
  "session.error": "error",
  "permission.asked": "permission",
  "permission.replied": "busy",
  "question.asked": "question",
  "question.replied": "busy",
  "question.rejected": "busy",
}

// A resumed conversation (`opencode -s`) gets orange's prompt through opencode's own API:
// opencode 1.18 leaves `--prompt` unsent there. resume.json is read once and removed, and
// the prompt is sent on the first event, once the server runs.
const takeResume = () => {
  try {
    const file = join(process.env.OPENCODE_CONFIG_DIR || "", "resume.json")
    const r = JSON.parse(readFileSync(file, "utf8"))
    unlinkSync(file)
    return r.session && r.prompt ? r : undefined
  } catch {
    return undefined
  }
}

export const OrangePlugin = async ({ client }) => {
  let resume = takeResume()
  const sendResume = () => {
    const r = resume
    resume = undefined
    if (!r) return
    const parts = [{ type: "text", text: r.prompt }]
    setTimeout(() => {
      try {
        Promise.resolve(
          client.session.promptAsync({
            sessionID: r.session,
            parts,
            path: { id: r.session },
            body: { parts },
          }),
        ).catch(() => {})
      } catch {}
    }, 0)
  }
  const bin = process.env.ORANGE_BIN || "orange"
  const children = new Set()
  const failed = new Set()
  // Waiting events ({ event, body, session, state, only }); one hook process at a time.
  let waiting = []
  let running = false
  // "<session> <state>" of the last event sent.
  let last
  const run = (e, done) => {
    try {
      const p = spawn(bin, ["hook", "agent", "opencode." + e.event], {
        stdio: ["pipe", "ignore", "ignore"],
      })
      p.on("error", () => done())
      p.on("close", () => done())
      p.stdin.on("error", () => {})
      p.stdin.end(e.body)
    } catch {
      done()
    }
  }
  const next = () => {
    while (!running && waiting.length) {
      const e = waiting.shift()
      const said = e.session + " " + e.state
      if (e.only && said === last) continue
      last = said
      running = true
      let once = false
      run(e, () => {
        if (once) return
        once = true
        running = false
        next()
      })
    }
  }
  // `state`: what the event says of the turn ("busy", "idle", or its own kind); `only`:
  // that is all it says.
  const send = (event, props, state, only = false) => {
    const session = props?.session_id
    if (only) waiting = waiting.filter((w) => !(w.only && w.session === session))
    waiting.push({ event, body: JSON.stringify(props ?? {}), session, state, only })
    try {
      next()
    } catch {}
  }
  const sessionOf = (props) =>
    props?.sessionID ?? props?.info?.id ?? props?.info?.sessionID ?? props?.part?.sessionID
  return {
    event: async ({ event }) => {
      sendResume()
      if (!event || !FORWARD.has(event.type)) return
      const props = event.properties ?? {}
      if (event.type === "session.created" && props.info?.parentID) {
        children.add(props.info.id)
        return
      }
      const session = sessionOf(props)
      if (session && children.has(session)) return
      const status = event.type === "session.status" ? props.status?.type : undefined
      if (event.type === "session.error") failed.add(session)
      else if (status === "busy") failed.delete(session)
      else if ((status === "idle" || event.type === "session.idle") && failed.has(session)) return
      // busy and idle say only a state; a retry says which attempt, and why.
      const only = status === "busy" || status === "idle" || event.type === "session.idle"
      const state = only ? (status ?? "idle") : (SAYS[event.type] ?? status)
      send(event.type, { ...props, session_id: session }, state, only)
    },
    // A message sent to the session: its text, without the parts opencode adds itself
    // (synthetic), so a task started without a prompt takes the first one typed.
    "chat.message": async (input, output) => {
      if (children.has(input?.sessionID)) return
      const prompt = (output?.parts ?? [])
        .filter((p) => p?.type === "text" && !p.synthetic && typeof p.text === "string")
        .map((p) => p.text)
        .join("\n")
      send("chat.message", { prompt, session_id: input?.sessionID }, "busy")
    },
    "tool.execute.before": async (input) => {
      if (children.has(input?.sessionID)) return
      // A tool starts: the turn is busy, no more (orange hears the tool's end).
      const props = { tool: input?.tool, session_id: input?.sessionID }
      send("tool.execute.before", props, "busy", true)
    },
    "tool.execute.after": async (input) => {
      if (children.has(input?.sessionID)) return
      send("tool.execute.after", { tool: input?.tool, session_id: input?.sessionID }, "busy")
    },
  }
}
