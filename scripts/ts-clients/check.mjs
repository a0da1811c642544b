// Runs seed 003's client check with the real TypeScript MCP clients pinned
// in package-lock.json: @modelcontextprotocol/sdk (v1) and
// @modelcontextprotocol/client (v2). stress clientcheck spawns it as
//
//   node check.mjs '{"url":"http://127.0.0.1:PORT/","tool":"measure","shapes":["conforming_success",…]}'
//
// Each client connects to the fixture server over streamable HTTP twice: once
// calling tools/list first (so it holds the tool's outputSchema), once cold.
// Then it calls the tool once per shape. The script prints one JSON document
// on stdout: {"node", "clients": [{client, package, version,
// protocol_version}…], "cells": [{client, discovered, shape, returned,
// is_error, structured, code, error}…]}. It exits 1, with the reason on
// stderr, when something other than a tool call fails.
import { readFileSync } from "node:fs";

import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";

// Note: stdout carries the result alone; whatever the libraries log goes to
// stderr.
console.log = console.info = console.debug = console.warn = console.error;

function installed(pkg) {
  const file = new URL(`./node_modules/${pkg}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(file, "utf8")).version;
}

const clients = [
  {
    client: "ts-v1",
    package: "@modelcontextprotocol/sdk",
    async connect(url) {
      const transport = new TransportV1(new URL(url));
      const client = new ClientV1({ name: "checkmatrix-ts-v1", version: "1" }, { capabilities: {} });
      await client.connect(transport);
      return { client, protocol: transport.protocolVersion };
    },
  },
  {
    client: "ts-v2",
    package: "@modelcontextprotocol/client",
    async connect(url) {
      const transport = new TransportV2(new URL(url));
      const client = new ClientV2({ name: "checkmatrix-ts-v2", version: "1" }, { capabilities: {} });
      // Note: the plain 2025 initialize handshake, as in seed 003 (its v2
      // client connected with prior.kind legacy). It is also 2.4.0's default
      // (versionNegotiation mode legacy), so this only makes it explicit.
      await client.connect(transport, { prior: { kind: "legacy" } });
      return { client, protocol: client.getNegotiatedProtocolVersion() };
    },
  },
];

async function main() {
  const { url, tool, shapes } = JSON.parse(process.argv[2] ?? "null") ?? {};
  if (typeof url !== "string" || typeof tool !== "string" || !Array.isArray(shapes)) {
    throw new Error('usage: node check.mjs \'{"url":URL,"tool":NAME,"shapes":[SHAPE…]}\'');
  }
  const out = { node: process.version, clients: [], cells: [] };
  for (const c of clients) {
    const info = { client: c.client, package: c.package, version: installed(c.package), protocol_version: "" };
    out.clients.push(info);
    for (const discovered of [true, false]) {
      const { client, protocol } = await c.connect(url);
      info.protocol_version = protocol ?? "";
      try {
        if (discovered) {
          const { tools } = await client.listTools();
          const t = tools.find((t) => t.name === tool);
          if (!t?.outputSchema) {
            throw new Error(`${c.client}: tools/list did not list ${tool} with its outputSchema`);
          }
        }
        for (const shape of shapes) {
          const cell = { client: c.client, discovered, shape, returned: false, is_error: false, code: 0, error: "" };
          try {
            const res = await client.callTool({ name: tool, arguments: { shape } });
            cell.returned = true;
            cell.is_error = res.isError === true;
            if (res.structuredContent !== undefined) {
              cell.structured = res.structuredContent;
            }
          } catch (err) {
            cell.code = Number.isInteger(err?.code) ? err.code : 0;
            cell.error = String(err?.message ?? err);
          }
          out.cells.push(cell);
        }
      } finally {
        await client.close();
      }
    }
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((err) => {
  process.stderr.write(`check.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
