// orange's plugin for opencode (written by orange into the config directory it owns for
// one task, OPENCODE_CONFIG_DIR; never the user's own). It tells orange what opencode
// does: each event below runs `orange hook agent opencode.<event>` with the event's
// properties as JSON on standard input, one at a time and in order (a burst of
// busy/idle must not land reversed). Sub-agent sessions (a parentID) are not the task's
// conversation: their events are left out. opencode 1.18 follows a session.error with
// session.status idle and session.idle at once: those are left out too until the next
// busy, so the error stays what orange sees. Nothing here may break opencode: every
// failure is swallowed.
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
  let queue = Promise.resolve()
  const send = (event, props) => {
    const body = JSON.stringify(props ?? {})
    queue = queue
      .then(
        () =>
          new Promise((done) => {
            try {
              const p = spawn(bin, ["hook", "agent", "opencode." + event], {
                stdio: ["pipe", "ignore", "ignore"],
              })
              p.on("error", () => done())
              p.on("close", () => done())
              p.stdin.on("error", () => {})
              p.stdin.end(body)
            } catch {
              done()
            }
          }),
      )
      .catch(() => {})
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
      send(event.type, { ...props, session_id: session })
    },
    // A message sent to the session: its text, without the parts opencode adds itself
    // (synthetic), so a task started without a prompt takes the first one typed.
    "chat.message": async (input, output) => {
      if (children.has(input?.sessionID)) return
      const prompt = (output?.parts ?? [])
        .filter((p) => p?.type === "text" && !p.synthetic && typeof p.text === "string")
        .map((p) => p.text)
        .join("\n")
      send("chat.message", { prompt, session_id: input?.sessionID })
    },
    "tool.execute.before": async (input) => {
      if (children.has(input?.sessionID)) return
      send("tool.execute.before", { tool: input?.tool, session_id: input?.sessionID })
    },
    "tool.execute.after": async (input) => {
      if (children.has(input?.sessionID)) return
      send("tool.execute.after", { tool: input?.tool, session_id: input?.sessionID })
    },
  }
}
