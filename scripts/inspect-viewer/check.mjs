// Opens Inspect eval logs in Inspect's own log viewer, in headless
// Chromium, for the test of stress export -format inspect
// (cmd/stress TestExportInInspectViewer).
//
// It builds the viewer into SITE (build.mjs; the logs are in SITE/logs
// with their listing.json), serves SITE on 127.0.0.1 (serve.mjs, with
// Range requests) and checks, against EXPECT (JSON written by the test
// from the bundle: each log's file, task, model, sample count, its first
// scores with the cell's mean and count, and one decision's input,
// output and tool calls; "remote_image", the URL of the remote markdown
// image, when that decision's answer is hostile HTML and markdown):
//   - the log list shows every log with its task and model;
//   - each log shows its sample count and the cell's scores;
//   - the decision's sample opens and its Messages tab shows its input,
//     its raw output and its tool calls; a hostile one's javascript:
//     links are clicked, its Transcript tab opened, and its remote
//     markdown image must be refused by the page's
//     Content-Security-Policy (src/index.html), which refuses nothing
//     else than a hostile answer's content;
//   - no dialog, no console error (but the policy's refusals), no page
//     error, no failed request, and no request beyond 127.0.0.1: every
//     request beyond it is recorded and aborted, so none leaves.
// Screenshots go to SHOTS. Prints one JSON report; exit status 0 when
// every check passed, else 1.
//
// Usage: node check.mjs SITE SHOTS EXPECT
import { launch } from "puppeteer-core";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { buildSite } from "./build.mjs";
import { serve } from "./serve.mjs";

const [site, shots, expectFile] = process.argv.slice(2);
if (!site || !shots || !expectFile) {
  console.error("usage: node check.mjs SITE SHOTS EXPECT");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const expect = JSON.parse(readFileSync(expectFile, "utf8"));
const LOG_DIR = "logs";

// utils/format.ts formatPrettyDecimal: how the viewer shows a metric.
function prettyDecimal(num, max = 3) {
  const s = num.toString();
  const places = s.includes(".") ? s.split(".")[1].length : 0;
  if (places === 0) return num.toFixed(1);
  if (places > max) return num.toFixed(max);
  return s;
}
const norm = (s) => String(s).replace(/\s+/g, " ").trim();
// A short, markdown-proof piece of a text: its first line's first 40
// characters, without the characters markdown rendering eats.
function snippet(text) {
  const line = text.split("\n").map((l) => l.replace(/[*_#`>\[\]]/g, "").trim()).find((l) => l) || "";
  return norm(line).slice(0, 40).trim();
}

const report = { checks: [], console: [], csp_refusals: [], dialogs: [], page_errors: [], failed_requests: [], requests: [], foreign_requests: [], timings_ms: {}, screenshots: [] };
// A console message of the Content-Security-Policy refusing something.
const cspRefusal = (text) => /Content Security Policy/i.test(text);
// The one refusal expected on every page: the viewer's JSON worker
// evaluates its JSON5 parser from a string, which the policy refuses
// ('unsafe-eval'); the worker still parses JSON, and only logs holding
// NaN or Infinity (which stress never writes) need JSON5.
const expectedRefusal = (text) => text.startsWith("JSON5 init error in worker");
const check = (name, ok, detail) => {
  report.checks.push({ name, ok: !!ok, ...(detail === undefined ? {} : { detail }) });
  return ok;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let t = Date.now();
await buildSite(site);
report.timings_ms.build = Date.now() - t;
report.bundle_bytes = statSync(join(site, "assets", "viewer.js")).size;

const { server, url: base } = await serve(site);
const origin = base.replace(/\/$/, "");
const browser = await launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on("console", (m) => {
    if (cspRefusal(m.text())) report.csp_refusals.push(m.text());
    else report.console.push({ type: m.type(), text: m.text() });
  });
  page.on("dialog", async (d) => {
    report.dialogs.push(`${d.type()}: ${d.message()}`);
    await d.dismiss().catch(() => {});
  });
  page.on("pageerror", (e) => report.page_errors.push(String(e.message || e)));
  page.on("requestfailed", (r) => {
    // The viewer reads only the headers of a HEAD request; Chromium then
    // reports it aborted although the server answered.
    if (r.method() === "HEAD" && r.failure()?.errorText === "net::ERR_ABORTED") return;
    if (r.failure()?.errorText === "net::ERR_BLOCKED_BY_CSP") {
      report.csp_refusals.push(`${r.method()} ${r.url()} blocked`);
      return;
    }
    report.failed_requests.push(`${r.method()} ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) report.failed_requests.push(`${r.status()} ${r.url()}`);
  });
  // Every request passes here: one beyond the site is recorded and
  // aborted (whatever the page's policy lets through, nothing leaves).
  await page.setRequestInterception(true);
  page.on("request", (r) => {
    const u = r.url();
    if (u.startsWith("data:") || u.startsWith("blob:")) return r.continue();
    report.requests.push(`${r.method()} ${u}`);
    if (u.startsWith(origin + "/")) return r.continue();
    report.foreign_requests.push(u);
    return r.abort("blockedbyclient");
  });
  const pageText = async () => norm(await page.evaluate(() => document.body.innerText));
  const shot = async (name) => {
    const path = join(shots, name);
    await page.screenshot({ path });
    report.screenshots.push(path);
  };

  // 1. The log list: every log with its task and model.
  t = Date.now();
  await page.goto(base, { waitUntil: "load", timeout: 60000 });
  const rowSel = ".ag-center-cols-container .ag-row[row-id]";
  const want = Object.fromEntries(expect.logs.map((l) => [l.file, [l.task, l.model]]));
  // The grid first shows rows guessed from the file names, then fills
  // them from listing.json.
  await page
    .waitForFunction(
      (sel, want) => {
        const rows = [...document.querySelectorAll(sel)];
        return (
          Object.entries(want).every(([id, [task, model]]) =>
            rows.some((r) => r.getAttribute("row-id") === id && r.querySelector("[col-id=task]")?.textContent.trim() === task && r.querySelector("[col-id=model]")?.textContent.trim() === model),
          ) && !document.body.textContent.includes("Syncing data")
        );
      },
      { timeout: 60000 },
      rowSel,
      want,
    )
    .catch(() => {});
  report.timings_ms.list = Date.now() - t;
  await shot("01-list.png");
  const rows = await page.$$eval(rowSel, (rs) => rs.map((r) => ({ id: r.getAttribute("row-id"), task: r.querySelector("[col-id=task]")?.textContent.trim(), model: r.querySelector("[col-id=model]")?.textContent.trim() })));
  check("list: one row per log", rows.length === expect.logs.length, rows.map((r) => r.id));
  for (const l of expect.logs) {
    const row = rows.find((r) => r.id === l.file);
    check(`list: ${l.file} shows task ${l.task} and model ${l.model}`, row && row.task === l.task && row.model === l.model, row);
  }

  // 2. Each log: its sample count and the cell's scores; one decision's
  // sample: its input, raw output and tool calls.
  let i = 0;
  for (const l of expect.logs) {
    i++;
    const tag = `log ${l.file}`;
    t = Date.now();
    await page.goto(base + `#/${LOG_DIR}/${encodeURIComponent(l.file)}`, { waitUntil: "load" });
    const footer = `${l.samples} Samples`;
    // The log is shown when its file, its model and its sample count are.
    const shown = await page
      .waitForFunction(
        (file, model, footer) => {
          const text = document.body.innerText;
          return text.includes(file.slice(0, 40)) && text.includes(model) && [...document.querySelectorAll("*")].some((e) => e.children.length === 0 && e.textContent.trim() === footer);
        },
        { timeout: 60000 },
        l.file,
        l.model,
        footer,
      )
      .then(() => true)
      .catch(() => false);
    report.timings_ms[`open ${l.file}`] = Date.now() - t;
    await sleep(300);
    await shot(`02-log-${i}.png`);
    check(`${tag}: shows "${footer}", its task and model`, shown && (await pageText()).includes(l.task));
    const text = await pageText();
    // A score some samples lack (error decisions) shows its scored
    // samples after its name: "strict (2/6) 0.0 0.0".
    const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    for (const sc of l.scores) {
      const row = `${sc.name} ${prettyDecimal(sc.mean)} ${prettyDecimal(sc.count)}`;
      const re = new RegExp(`${esc(sc.name)}( \\(\\d+/\\d+\\))? ${esc(prettyDecimal(sc.mean))} ${esc(prettyDecimal(sc.count))}`);
      check(`${tag}: score row "${row}"`, re.test(text));
    }

    const s = l.sample;
    t = Date.now();
    await page.goto(base + `#/${LOG_DIR}/${encodeURIComponent(l.file)}/samples/sample/${encodeURIComponent(s.id)}/${s.epoch}/`, { waitUntil: "load" });
    const title = `Sample ${s.id} (Epoch ${s.epoch})`;
    await page.waitForFunction((title) => document.body.innerText.includes(title) && document.querySelector("button[role=tab]#messages"), { timeout: 60000 }, title).catch(() => {});
    // The sample may render again once loaded, back on its first tab:
    // click until the Messages tab stays selected.
    for (let k = 0; k < 10; k++) {
      await page.click("button[role=tab]#messages").catch(() => {});
      const on = await page
        .waitForFunction(() => document.querySelector("button[role=tab]#messages")?.getAttribute("aria-selected") === "true", { timeout: 1000 })
        .then(() => true)
        .catch(() => false);
      if (on) break;
    }
    await sleep(500);
    report.timings_ms[`sample ${l.file}`] = Date.now() - t;
    await shot(`03-sample-${i}.png`);
    check(`${tag}: ${title} opens`, (await pageText()).includes(title));
    const msgs = norm(await page.$eval("#messages-contents", (e) => e.innerText).catch(() => ""));
    for (const input of s.input) {
      const sn = snippet(input);
      if (sn) check(`${tag}: ${s.id} input "${sn}"`, msgs.includes(sn));
    }
    // A JSON answer is shown as its fields; other text as it is.
    let fields = null;
    try {
      const v = JSON.parse(s.output);
      if (v && typeof v === "object" && !Array.isArray(v)) fields = v;
    } catch {}
    if (fields) {
      for (const [k, v] of Object.entries(fields)) {
        if (typeof v === "string" || typeof v === "number") check(`${tag}: ${s.id} output field ${k}: ${v}`, msgs.includes(k) && msgs.includes(String(v)));
      }
    } else if (snippet(s.output)) {
      check(`${tag}: ${s.id} output "${snippet(s.output)}"`, msgs.includes(snippet(s.output)));
    }
    const titles = await page.$$eval("#messages-contents i.bi-tools + code", (cs) => cs.map((c) => c.textContent.trim()));
    for (const [k, fn] of (s.tool_calls || []).entries()) {
      check(`${tag}: ${s.id} tool call ${k + 1} ${fn}(…)`, titles[k]?.startsWith(`${fn}(`), titles);
    }
    if (expect.remote_image) {
      // Click every javascript: link the answer became, then show the
      // transcript, where the answer is rendered again.
      const links = await page.$$("a[href^='javascript:' i]");
      report.javascript_links = (report.javascript_links || 0) + links.length;
      for (const a of links) await a.click().catch(() => {});
      await page.click("button[role=tab]#transcript").catch(() => {});
      await sleep(1500);
      await shot(`04-hostile-${i}.png`);
      check(`${tag}: ${s.id} remote markdown image refused by the Content-Security-Policy`, report.csp_refusals.some((c) => c.includes(expect.remote_image)), report.csp_refusals);
    }
  }
} finally {
  await browser.close();
  server.close();
}
check("no dialog", report.dialogs.length === 0, report.dialogs);
if (!expect.remote_image) {
  const refused = report.csp_refusals.filter((c) => !expectedRefusal(c));
  check("the Content-Security-Policy refused nothing but the JSON5 worker's eval", refused.length === 0, refused);
}
check("no console errors", !report.console.some((c) => c.type === "error"), report.console.filter((c) => c.type === "error"));
check("no page errors", report.page_errors.length === 0, report.page_errors);
check("no failed requests", report.failed_requests.length === 0, report.failed_requests);
check("no request beyond 127.0.0.1", report.foreign_requests.length === 0, report.foreign_requests);
report.failed = report.checks.filter((c) => !c.ok).map((c) => c.name);
report.ok = report.failed.length === 0;
console.log(JSON.stringify(report, null, 2));
process.exit(report.ok ? 0 : 1);
