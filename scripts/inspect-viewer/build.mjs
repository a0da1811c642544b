// Bundles Inspect's log viewer (src/entry.jsx, which renders the npm
// package's App against a static log directory) with esbuild into a
// static site: SITE/index.html and SITE/assets/viewer.{js,css}. The logs
// go to SITE/logs/ (with their listing.json), as stress export writes
// them. src/index.html sets the page's Content-Security-Policy, which
// keeps what a log holds (a model's HTML, remote images) from running or
// fetching anything.
//
// Usage: node build.mjs SITE
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export async function buildSite(site) {
  const here = dirname(fileURLToPath(import.meta.url));
  mkdirSync(join(site, "assets"), { recursive: true });
  await build({
    entryPoints: [join(here, "src", "entry.jsx")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2020",
    jsx: "automatic",
    minify: true,
    define: { "process.env.NODE_ENV": '"production"' },
    // The package inlines its fonts and workers; these loaders are a guard.
    loader: { ".woff": "file", ".woff2": "file", ".ttf": "file", ".eot": "file", ".svg": "file", ".png": "file" },
    outfile: join(site, "assets", "viewer.js"),
    logLevel: "warning",
  });
  copyFileSync(join(here, "src", "index.html"), join(site, "index.html"));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [site] = process.argv.slice(2);
  if (!site) {
    console.error("usage: node build.mjs SITE");
    process.exit(2);
  }
  await buildSite(site);
}
