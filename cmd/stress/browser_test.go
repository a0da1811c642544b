package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// needBrowser returns the absolute path of script and Chromium's ($CHROMIUM,
// else Debian's /usr/bin/chromium). Without Chromium or the script's
// package pkg it skips the test, except under CI=true, where it fails
// (.ci/run installs Chromium, scripts/test the packages).
func needBrowser(t *testing.T, script, pkg string) (string, string) {
	t.Helper()
	script, _ = filepath.Abs(script)
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	for _, need := range []struct{ path, by string }{
		{filepath.Join(filepath.Dir(script), "node_modules", pkg), "scripts/test"},
		{chromium, ".ci/run"},
	} {
		if _, err := os.Stat(need.path); err != nil {
			missing(t, "%s is missing (%s installs it): %v", need.path, need.by, err)
		}
	}
	return script, chromium
}

// missing ends test t for want of something it needs that is not
// installed: it fails under CI=true, where .ci/run and scripts/test
// install everything the tests need, and skips otherwise.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// TestReportInBrowser opens report.html in headless Chromium (Debian's
// package, driven by scripts/browser/check.mjs through puppeteer-core):
// every figure decodes and has a size, the page makes no network request,
// no table is wider than the page body (in a 1280 px window), a full-page
// screenshot is taken, and the report's sections are there, the
// per-contrast, paper-consistency and power sections included. Without
// Chromium or the script's packages it skips, except under CI=true, where
// it fails (.ci/run installs Chromium, scripts/test the packages).
func TestReportInBrowser(t *testing.T) {
	script, chromium := needBrowser(t, "../../scripts/browser/check.mjs", "puppeteer-core")
	dir := mockBundle(t, paperKinds, 5, nil)
	if _, log, err := runCmd(t, "report", "-against", "paper", "-match-label", "-pair", "normalized,prose,cover", "-power-diff", "0.2", "-b", "2000", dir); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	cmd := exec.Command("node", script, filepath.Join(dir, "report", "report.html"), shot)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var got struct {
		Images          int      `json:"images"`
		Broken          []string `json:"broken"`
		SVGs            int      `json:"svgs"`
		EmptySVGs       int      `json:"empty_svgs"`
		Requests        []string `json:"requests"`
		Headings        []string `json:"headings"`
		WideTables      []string `json:"wide_tables"`
		ScreenshotBytes int      `json:"screenshot_bytes"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report", "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Count(string(html), "<img "); got.Images != want || want < 3 {
		t.Errorf("the browser sees %d images, the file has %d (want at least 3)", got.Images, want)
	}
	if len(got.Broken) > 0 || got.EmptySVGs > 0 {
		t.Errorf("figures that did not render: %q, %d empty SVGs", got.Broken, got.EmptySVGs)
	}
	if len(got.Requests) > 0 {
		t.Errorf("the page made network requests: %q", got.Requests)
	}
	if len(got.WideTables) > 0 {
		t.Errorf("tables wider than the page body (their last columns behind a scrollbar):\n%s", strings.Join(got.WideTables, "\n"))
	}
	if got.ScreenshotBytes < 50_000 {
		t.Errorf("screenshot of %d bytes: too small for a rendered report", got.ScreenshotBytes)
	}
	for _, h := range []string{"Counts", "Rates and intervals", "Paired comparisons", "Against the paper", "Power", "Methods"} {
		if !slices.ContainsFunc(got.Headings, func(x string) bool { return strings.HasPrefix(x, h) }) {
			t.Errorf("no section %q among %q", h, got.Headings)
		}
	}
	if !slices.ContainsFunc(got.Headings, func(x string) bool { return strings.Contains(x, "normalized − prose on Cover") }) {
		t.Errorf("no section of the requested contrast among %q", got.Headings)
	}
}
