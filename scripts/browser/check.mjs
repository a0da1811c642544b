// Opens a report.html in headless Chromium (the Debian package; its path
// in CHROMIUM, default /usr/bin/chromium) through puppeteer-core, in a
// 1280 x 900 window, takes a full-page screenshot, and prints one JSON
// object for the test suite:
//
//   {"images": N, "broken": [src…], "svgs": N, "empty_svgs": N,
//    "requests": [url…], "headings": [text…], "wide_tables": [text…],
//    "screenshot_bytes": N}
//
// requests lists every request the page made other than the report file
// itself and data: URLs; broken lists the images that did not decode; an
// empty SVG is an inline <svg> with no size; wide_tables names, by the
// heading above them, the tables wider than the page body, whose last
// columns a scrollbar hides.
//
// Usage: node check.mjs REPORT.html SCREENSHOT.png
import { launch } from "puppeteer-core";
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [report, shot] = process.argv.slice(2);
if (!report || !shot) {
  console.error("usage: node check.mjs REPORT.html SCREENSHOT.png");
  process.exit(2);
}
const page_url = pathToFileURL(resolve(report)).href;
const browser = await launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const requests = [];
  page.on("request", (r) => {
    const u = r.url();
    if (u !== page_url && !u.startsWith("data:")) requests.push(u);
  });
  await page.goto(page_url, { waitUntil: "networkidle0", timeout: 60000 });
  const facts = await page.evaluate(async () => {
    const imgs = Array.from(document.images);
    await Promise.all(imgs.map((i) => (i.complete ? null : new Promise((ok) => { i.onload = i.onerror = ok; }))));
    const svgs = Array.from(document.querySelectorAll("svg"));
    const body = document.body.getBoundingClientRect().right - parseFloat(getComputedStyle(document.body).paddingRight);
    const heading = (t) => {
      let h = t.previousElementSibling;
      while (h && !/^H[1-6]$/.test(h.tagName)) h = h.previousElementSibling;
      return h ? h.textContent.trim() : "(no heading)";
    };
    return {
      images: imgs.length,
      broken: imgs.filter((i) => !(i.complete && i.naturalWidth > 0 && i.naturalHeight > 0)).map((i) => i.getAttribute("src").slice(0, 80)),
      svgs: svgs.length,
      empty_svgs: svgs.filter((s) => { const b = s.getBoundingClientRect(); return b.width === 0 || b.height === 0; }).length,
      headings: Array.from(document.querySelectorAll("h1, h2, h3")).map((h) => h.textContent.trim()),
      wide_tables: Array.from(document.querySelectorAll("table"))
        .filter((t) => t.scrollWidth > t.clientWidth || t.getBoundingClientRect().right > body + 0.5)
        .map((t) => `${heading(t)}: ${t.scrollWidth} px of content in ${t.clientWidth} px`),
    };
  });
  await page.screenshot({ path: shot, fullPage: true });
  console.log(JSON.stringify({ ...facts, requests, screenshot_bytes: statSync(shot).size }));
} finally {
  await browser.close();
}
