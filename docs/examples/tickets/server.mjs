// A small MCP server of your own, for the worked example of
// docs/bring-your-own-server.md: a ticket desk over a SQLite file,
// speaking MCP over stdio (newline-delimited JSON-RPC) with Node.js's
// built-in SQLite (Node.js 22.5 or later). Usage: node server.mjs DB_FILE
import { DatabaseSync } from "node:sqlite";
import { createInterface } from "node:readline";

const db = new DatabaseSync(process.argv[2]);
const tools = [
  {
    name: "open_ticket",
    description: "Open a ticket; priority is 1 (urgent) to 3 (low). Returns the ticket's id.",
    inputSchema: {
      type: "object",
      properties: { title: { type: "string" }, priority: { type: "integer" } },
      required: ["title", "priority"],
    },
    annotations: { readOnlyHint: false, idempotentHint: false },
  },
  {
    name: "close_ticket",
    description: "Close a ticket by id.",
    inputSchema: { type: "object", properties: { id: { type: "integer" } }, required: ["id"] },
    annotations: { readOnlyHint: false, idempotentHint: true },
  },
  {
    name: "list_tickets",
    description: "List the open tickets.",
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
  },
];

const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], isError });

function call(name, a) {
  switch (name) {
    case "open_ticket": {
      if (typeof a.title !== "string" || !Number.isInteger(a.priority)) {
        return text("open_ticket needs a title (string) and a priority (integer)", true);
      }
      if (a.priority < 1 || a.priority > 3) {
        return text(`priority ${a.priority} is out of range: use 1 (urgent), 2 or 3 (low)`, true);
      }
      const r = db.prepare("INSERT INTO tickets (title, priority) VALUES (?, ?)").run(a.title, a.priority);
      return text(`opened ticket ${r.lastInsertRowid}`);
    }
    case "close_ticket": {
      const r = db.prepare("UPDATE tickets SET status = 'closed' WHERE id = ?").run(a.id);
      return r.changes === 1 ? text(`closed ticket ${a.id}`) : text(`no ticket ${a.id}`, true);
    }
    case "list_tickets":
      return text(JSON.stringify(db.prepare("SELECT id, title, priority FROM tickets WHERE status = 'open' ORDER BY id").all()));
  }
  return null;
}

function answer(msg) {
  switch (msg.method) {
    case "initialize":
      return {
        protocolVersion: msg.params?.protocolVersion === "2025-06-18" ? "2025-06-18" : "2025-03-26",
        capabilities: { tools: {} },
        serverInfo: { name: "tickets", version: "1.0.0" },
      };
    case "ping":
      return {};
    case "tools/list":
      return { tools };
    case "tools/call": {
      const r = call(msg.params?.name, msg.params?.arguments ?? {});
      if (r === null) throw { code: -32602, message: `unknown tool ${msg.params?.name}` };
      return r;
    }
  }
  throw { code: -32601, message: `method ${msg.method} not found` };
}

createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.id === undefined) return; // a notification
  let out;
  try {
    out = { jsonrpc: "2.0", id: msg.id, result: answer(msg) };
  } catch (e) {
    out = { jsonrpc: "2.0", id: msg.id, error: { code: e.code ?? -32603, message: e.message ?? String(e) } };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
