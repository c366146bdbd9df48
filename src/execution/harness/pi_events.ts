// orange: pi's events to `orange hook agent EVENT` (written by orange for its task; see
// orange's docs/agents.md). Nothing here may break pi: every failure is swallowed.
import { spawn } from "node:child_process";

export default function (pi: any) {
  const bin = process.env.ORANGE_BIN || "orange";
  let running = false;
  let pending: { event: string; payload: any } | null = null;
  let errors = 0;
  let spaced = true;

  const run = (event: string, payload: any) => {
    running = true;
    let child: any;
    const next = () => {
      running = false;
      const p = pending;
      pending = null;
      if (p) run(p.event, p.payload);
    };
    try {
      child = spawn(bin, ["hook", "agent", event], { stdio: ["pipe", "ignore", "ignore"] });
      child.on("error", next);
      child.on("close", next);
      child.stdin.on("error", () => {});
      child.stdin.end(JSON.stringify(payload));
    } catch {
      next();
    }
  };
  let registry: any = undefined;
  const available = () => {
    try {
      return registry?.getAvailable?.()?.length ?? null;
    } catch {
      return null;
    }
  };
  const send = (event: string, fields: any = {}, ctx: any = undefined) => {
    if (ctx?.modelRegistry) registry = ctx.modelRegistry;
    const payload = { harness: "pi", pi_event: event, available: available(), ...fields };
    if (running) {
      // Only the newest state matters; a tool call on the way is kept as progress.
      const progress = pending?.payload?.progress || event.startsWith("tool_");
      pending = { event, payload: { ...payload, progress } };
    } else {
      run(event, { ...payload, progress: event.startsWith("tool_") });
    }
  };
  const last = (messages: any[]) => {
    for (let i = (messages?.length ?? 0) - 1; i >= 0; i--) {
      if (messages[i]?.role === "assistant") return messages[i];
    }
    return undefined;
  };
  const text = (m: any) =>
    typeof m?.content === "string"
      ? m.content
      : (Array.isArray(m?.content) ? m.content : []).filter((c: any) => c?.type === "text").map((c: any) => c.text).join("\n");

  pi.on("session_start", (e: any, ctx: any) => {
    send("session_start", { reason: e?.reason, model: ctx?.model?.id ?? null }, ctx);
  });
  pi.on("input", (e: any, ctx: any) => {
    errors = 0;
    send("input", { source: e?.source }, ctx);
    // orange hands pi a prompt that starts with "-", "@" or " " after one more space (pi
    // would take it for an option or a file): take that space away again, once.
    if (spaced && typeof e?.text === "string" && e.text.startsWith(" ") && process.argv.includes(e.text)) {
      spaced = false;
      return { action: "transform", text: e.text.slice(1), images: e.images };
    }
    spaced = false;
    return { action: "continue" };
  });
  pi.on("agent_start", () => send("agent_start"));
  pi.on("turn_start", () => send("turn_start"));
  pi.on("tool_execution_start", (e: any) => send("tool_execution_start", { tool: e?.toolName }));
  pi.on("tool_execution_end", (e: any) => send("tool_execution_end", { tool: e?.toolName, is_error: !!e?.isError }));
  pi.on("message_end", (e: any) => {
    const m = e?.message;
    if (m?.role !== "assistant") return;
    if (m.stopReason !== "error") errors = 0;
    send("message_end", { stop_reason: m.stopReason, error: m.errorMessage ?? null });
  });
  pi.on("agent_end", (e: any) => {
    const m = last(e?.messages);
    const failed = m?.stopReason === "error";
    errors = failed ? errors + 1 : 0;
    send("agent_end", {
      stop_reason: m?.stopReason ?? null,
      error: m?.errorMessage ?? null,
      attempt: failed ? errors : 0,
      text: failed ? null : text(m).slice(-2000),
    });
  });
}
