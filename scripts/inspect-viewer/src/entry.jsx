// Static Inspect log viewer: renders the @metrevals/inspect-log-viewer App
// against a static HTTP directory of logs (default "logs", next to
// index.html) holding the logs and a listing.json manifest.
//
// The log directory comes from <script id="log_dir_context"
// type="application/json">{"log_dir": "logs"}</script> in index.html (the
// same element `inspect view bundle` writes, which the library's own
// default API, used by its download button, also reads), or from a
// ?log_dir= query parameter, else "logs".
import { createRoot } from "react-dom/client";
import {
  App,
  clientApi,
  initializeStore,
  simpleHttpApi,
} from "@metrevals/inspect-log-viewer";
import "@metrevals/inspect-log-viewer/styles/index.css";

function resolveLogDir() {
  const el = document.getElementById("log_dir_context");
  if (el && el.textContent) {
    try {
      const ctx = JSON.parse(el.textContent);
      if (ctx.log_dir) return ctx.log_dir;
    } catch (e) {
      console.warn("bad log_dir_context", e);
    }
  }
  return new URLSearchParams(window.location.search).get("log_dir") || "logs";
}

// No trailing slash: the library fetches `${log_dir}/listing.json`.
const logDir = resolveLogDir().replace(/\/+$/, "");
// The static API also probes `${log_dir}/flow.yaml` and
// `${log_dir}/eval-set.json`; it tolerates their 404s, but Chromium still
// logs each 404 as a console error. A listing-only site has neither, so
// answer "none" without a request.
const api = clientApi({
  ...simpleHttpApi(logDir),
  get_flow: async () => undefined,
  get_eval_set: async () => undefined,
});

initializeStore(api, {
  downloadFiles: true,
  downloadLogs: false,
  webWorkers: true,
  streamSamples: false,
  streamSampleData: false,
});

const container = document.getElementById("app");
createRoot(container).render(<App api={api} />);
