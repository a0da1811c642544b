// Tiny static file server for the viewer: serves ROOT on 127.0.0.1:PORT
// (PORT 0 = any free port), with HTTP Range support (single range) and
// a request log on stderr. Prints "listening http://127.0.0.1:N/" on stdout.
// Usage: node serve.mjs ROOT [PORT]
// Also importable: import { serve } from "./serve.mjs"; const {server,url,log} = await serve(root)
import { createServer } from "node:http";
import { createReadStream, promises as fsp } from "node:fs";
import { extname, join, normalize, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";

const TYPES = {
  ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8", ".eval": "application/zip",
  ".zip": "application/zip", ".svg": "image/svg+xml", ".png": "image/png",
  ".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf",
  ".yaml": "text/yaml; charset=utf-8", ".txt": "text/plain; charset=utf-8",
};

export function serve(root, port = 0, { quiet = true } = {}) {
  root = resolve(root);
  const log = [];
  const server = createServer(async (req, res) => {
    const entry = { method: req.method, url: req.url, range: req.headers.range || null, status: 0 };
    log.push(entry);
    const done = (status) => { entry.status = status; if (!quiet) process.stderr.write(`${status} ${req.method} ${req.url}${entry.range ? " " + entry.range : ""}\n`); };
    try {
      if (req.method !== "GET" && req.method !== "HEAD") { res.writeHead(405).end(); return done(405); }
      let path = decodeURIComponent(new URL(req.url, "http://x").pathname);
      let file = normalize(join(root, path));
      if (file !== root && !file.startsWith(root + sep)) { res.writeHead(403).end(); return done(403); }
      let st = await fsp.stat(file).catch(() => null);
      if (st && st.isDirectory()) { file = join(file, "index.html"); st = await fsp.stat(file).catch(() => null); }
      if (!st || !st.isFile()) { res.writeHead(404, { "content-type": "text/plain" }).end("not found"); return done(404); }
      const headers = {
        "content-type": TYPES[extname(file).toLowerCase()] || "application/octet-stream",
        "accept-ranges": "bytes", "cache-control": "no-store",
        "last-modified": st.mtime.toUTCString(),
      };
      const m = req.headers.range && /^bytes=(\d*)-(\d*)$/.exec(req.headers.range.trim());
      if (req.headers.range && !m) { res.writeHead(416, { "content-range": `bytes */${st.size}` }).end(); return done(416); }
      if (m) {
        let start, end;
        if (m[1] === "") { const n = Number(m[2]); start = Math.max(0, st.size - n); end = st.size - 1; }
        else { start = Number(m[1]); end = m[2] === "" ? st.size - 1 : Math.min(Number(m[2]), st.size - 1); }
        if (start > end || start >= st.size) { res.writeHead(416, { "content-range": `bytes */${st.size}` }).end(); return done(416); }
        res.writeHead(206, { ...headers, "content-range": `bytes ${start}-${end}/${st.size}`, "content-length": end - start + 1 });
        if (req.method === "HEAD") { res.end(); return done(206); }
        createReadStream(file, { start, end }).pipe(res); return done(206);
      }
      res.writeHead(200, { ...headers, "content-length": st.size });
      if (req.method === "HEAD") { res.end(); return done(200); }
      createReadStream(file).pipe(res); return done(200);
    } catch (e) {
      res.writeHead(500).end(String(e)); return done(500);
    }
  });
  return new Promise((ok) => server.listen(port, "127.0.0.1", () => ok({ server, log, url: `http://127.0.0.1:${server.address().port}/` })));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [root, port] = process.argv.slice(2);
  if (!root) { console.error("usage: node serve.mjs ROOT [PORT]"); process.exit(2); }
  const { url } = await serve(root, Number(port || 0), { quiet: false });
  console.log(`listening ${url}`);
}
