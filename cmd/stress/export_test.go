package main

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/env/mcpenv"
	"github.com/mcpstress/stress/export/inspect"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
	"github.com/mcpstress/stress/synth"
)

// An exported Inspect log as the test reads it back: the fields the
// format requires (inspect_ai's EvalLog, version 2), checked by the
// test's own rules.
type exportedLog struct {
	Version int    `json:"version"`
	Status  string `json:"status"`
	Eval    *struct {
		EvalID   string            `json:"eval_id"`
		RunID    string            `json:"run_id"`
		Created  string            `json:"created"`
		Task     string            `json:"task"`
		TaskID   string            `json:"task_id"`
		TaskArgs map[string]string `json:"task_args"`
		Dataset  *struct {
			Samples int `json:"samples"`
		} `json:"dataset"`
		Model    string         `json:"model"`
		Config   map[string]any `json:"config"`
		Metadata map[string]any `json:"metadata"`
	} `json:"eval"`
	Plan *struct {
		Steps []struct {
			Solver string `json:"solver"`
		} `json:"steps"`
	} `json:"plan"`
	Results *struct {
		TotalSamples     int `json:"total_samples"`
		CompletedSamples int `json:"completed_samples"`
		Scores           []struct {
			Name          string `json:"name"`
			Scorer        string `json:"scorer"`
			Reducer       string `json:"reducer"`
			ScoredSamples int    `json:"scored_samples"`
			Metrics       map[string]struct {
				Name  string  `json:"name"`
				Value float64 `json:"value"`
			} `json:"metrics"`
		} `json:"scores"`
	} `json:"results"`
	Stats *struct {
		StartedAt   string                      `json:"started_at"`
		CompletedAt string                      `json:"completed_at"`
		ModelUsage  map[string]map[string]int64 `json:"model_usage"`
	} `json:"stats"`
	Error   *struct{ Message string } `json:"error"`
	Samples []exportedSample          `json:"samples"`
}

type exportedSample struct {
	ID       *string       `json:"id"`
	Epoch    int64         `json:"epoch"`
	Input    []exportedMsg `json:"input"`
	Target   *string       `json:"target"`
	Messages []exportedMsg `json:"messages"`
	Output   *struct {
		Model   string `json:"model"`
		Choices []struct {
			Message    exportedMsg `json:"message"`
			StopReason string      `json:"stop_reason"`
		} `json:"choices"`
		Completion string `json:"completion"`
	} `json:"output"`
	Scores map[string]struct {
		Value  *float64 `json:"value"`
		Answer string   `json:"answer"`
	} `json:"scores"`
	Metadata    map[string]any               `json:"metadata"`
	Events      []map[string]json.RawMessage `json:"events"`
	Error       *struct{ Message string }    `json:"error"`
	Attachments map[string]string            `json:"attachments"`
}

type exportedMsg struct {
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID        string         `json:"id"`
		Function  string         `json:"function"`
		Arguments map[string]any `json:"arguments"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

// text returns the message's text: its content string, or the text of
// its text contents (a reasoning content is apart).
func (m *exportedMsg) text(t *testing.T) string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		t.Fatalf("message %s: content %s", m.ID, m.Content)
	}
	var out string
	for _, p := range parts {
		if p.Type == "text" {
			out += p.Text
		}
	}
	return out
}

// inspectTime is a datetime as Python 3.10's fromisoformat reads it:
// no fraction, or exactly 3 or 6 digits, and an offset.
var inspectTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6})?([+-]\d{2}:\d{2}|Z)$`)

// checkExport reads the logs exported from bundle into out back and
// checks them against the bundle: every decision once, with the scores
// of its decisions.parquet row, every raw response byte for byte, each
// log's results equal to analyze -json's cell; and the format's required
// fields. It returns the logs by file name.
func checkExport(t *testing.T, bundle, out string) map[string]*exportedLog {
	t.Helper()
	var ix inspect.Index
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, inspect.IndexFile)), &ix); err != nil {
		t.Fatal(err)
	}
	var listing map[string]struct {
		Task, Model, Status string
		TaskID              string `json:"task_id"`
		Version             int
		PrimaryMetric       *struct {
			Name  string
			Value float64
		} `json:"primary_metric"`
	}
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, inspect.ListingFile)), &listing); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(files) != len(ix.Logs)+2 || len(listing) != len(ix.Logs) {
		t.Fatalf("%s holds %d files, listing.json %d logs, export.json %d", out, len(files), len(listing), len(ix.Logs))
	}
	rows := map[simulator.Key]results.Row{}
	if err := results.ScanRows(filepath.Join(bundle, results.DecisionsFile), func(r *results.Row) error {
		rows[r.Key()] = *r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	calls, err := results.ReadCalls(filepath.Join(bundle, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	responses := map[simulator.Key][]string{}
	for _, c := range calls {
		responses[c.Key] = append(responses[c.Key], c.Response)
	}
	js, _, err := runCmd(t, "analyze", "-json", "-b", "10", bundle)
	if err != nil {
		t.Fatal(err)
	}
	var an struct{ Cells []map[string]any }
	if err := json.Unmarshal([]byte(js), &an); err != nil {
		t.Fatal(err)
	}
	cellOf := func(model, prompt, condition string) map[string]any {
		for _, c := range an.Cells {
			if c["model"] == model && c["prompt"] == prompt && c["condition"] == condition {
				return c
			}
		}
		return nil
	}
	seen := map[simulator.Key]bool{}
	logs := map[string]*exportedLog{}
	for _, l := range ix.Logs {
		lg := readExported(t, filepath.Join(out, l.File))
		logs[l.File] = lg
		where := l.File
		if !strings.HasSuffix(l.File, "_"+l.TaskID+filepath.Ext(l.File)) || !regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-00-00_[^_]+_[^_]+_[0-9a-f]+\.(json|eval)$`).MatchString(l.File) {
			t.Errorf("%s: not an Inspect log file name {created}_{task}_{model}_{id}.json", where)
		}
		if lg.Version != inspect.LogVersion || lg.Status != "success" || lg.Eval == nil || lg.Plan == nil || lg.Stats == nil || lg.Results == nil {
			t.Fatalf("%s: version %d, status %q, or a required member missing", where, lg.Version, lg.Status)
		}
		e := lg.Eval
		if e.Task == "" || e.TaskID != l.TaskID || e.Model == "" || e.Dataset == nil || e.Config == nil || !inspectTime.MatchString(e.Created) ||
			!inspectTime.MatchString(lg.Stats.StartedAt) || !inspectTime.MatchString(lg.Stats.CompletedAt) {
			t.Errorf("%s: eval %+v, stats %+v", where, e, lg.Stats)
		}
		if e.TaskArgs["model"] != l.Model || e.TaskArgs["prompt"] != l.Prompt || e.TaskArgs["condition"] != l.Condition {
			t.Errorf("%s: task_args %v, export.json says %+v", where, e.TaskArgs, l)
		}
		if le := listing[l.File]; le.Task != e.Task || le.TaskID != e.TaskID || le.Model != e.Model || le.Version != 2 || le.Status != "success" ||
			le.PrimaryMetric == nil || le.PrimaryMetric.Name != "mean" {
			t.Errorf("%s: listing.json %+v", where, le)
		}
		ids := map[string]bool{}
		for _, s := range lg.Samples {
			ids[*s.ID] = true
		}
		if len(lg.Samples) != l.Samples || e.Dataset.Samples != len(ids) || lg.Results.TotalSamples != l.Samples {
			t.Errorf("%s: %d samples, dataset %d, results %d, export.json %d", where, len(lg.Samples), e.Dataset.Samples, lg.Results.TotalSamples, l.Samples)
		}
		// The results are analyze's cell.
		cell := cellOf(l.Model, l.Prompt, l.Condition)
		if cell == nil {
			t.Fatalf("%s: analyze -json has no cell %s/%s/%s", where, l.Model, l.Prompt, l.Condition)
		}
		if n := int(cell["n"].(float64)); lg.Results.CompletedSamples != n {
			t.Errorf("%s: completed_samples %d, analyze n %d", where, lg.Results.CompletedSamples, n)
		}
		// pass^k: analyze's estimates, exactly (the same computation),
		// each defined k once, after the columns' scores.
		var passK map[string]any
		passK, _ = cell["pass_k"].(map[string]any)
		wantPassK := map[string]float64{}
		for name, vs := range passK {
			for _, v := range vs.([]any) {
				v := v.(map[string]any)
				if est, ok := v["estimate"].(float64); ok {
					wantPassK[fmt.Sprintf("%s pass^%d", name, int(v["k"].(float64)))] = est
				}
			}
		}
		reduced, nPassK := 0, len(wantPassK)
		for i, sc := range lg.Results.Scores {
			if sc.Reducer != "" {
				reduced++
				key := sc.Name + " " + sc.Reducer
				est, ok := wantPassK[key]
				if !ok || sc.Metrics["mean"].Value != est || math.Abs(sc.Metrics["count"].Value-est*float64(sc.ScoredSamples)) > 1e-9 || i < len(lg.Results.Scores)-nPassK {
					t.Errorf("%s: score %s: mean %v count %v over %d, analyze %v (%v)", where, key, sc.Metrics["mean"].Value, sc.Metrics["count"].Value, sc.ScoredSamples, est, ok)
				}
				delete(wantPassK, key)
				continue
			}
			k, ok := cell[sc.Name].(float64)
			den := cell["n"].(float64)
			if col := simulator.ColumnIndex(sc.Name); col >= 0 && col.Column().Kind.Lab() {
				den = cell["lab_n"].(float64)
			}
			if !ok || sc.Metrics["count"].Value != k || math.Abs(sc.Metrics["mean"].Value-k/den) > 1e-12 {
				t.Errorf("%s: score %s: count %v mean %v; analyze %v/%v", where, sc.Name, sc.Metrics["count"].Value, sc.Metrics["mean"].Value, cell[sc.Name], den)
			}
		}
		if len(wantPassK) > 0 || reduced != nPassK {
			t.Errorf("%s: %d pass^k scores of analyze's %d; missing %v", where, reduced, nPassK, wantPassK)
		}
		for i := range lg.Samples {
			s := &lg.Samples[i]
			if s.ID == nil || s.Target == nil || s.Output == nil || s.Input == nil || s.Messages == nil || s.Events == nil || s.Attachments == nil {
				t.Fatalf("%s: sample %d lacks a required member", where, i)
			}
			k := simulator.Key{Model: l.Model, Prompt: l.Prompt, Condition: study.Condition(l.Condition), Scenario: *s.ID, Replicate: int(s.Epoch)}
			row, ok := rows[k]
			if !ok || seen[k] {
				t.Fatalf("%s: sample %s epoch %d: in decisions.parquet %v, seen before %v", where, *s.ID, s.Epoch, ok, seen[k])
			}
			seen[k] = true
			checkSample(t, where, s, &row, responses[k])
		}
	}
	if len(seen) != len(rows) {
		t.Errorf("%d decisions exported, decisions.parquet has %d", len(seen), len(rows))
	}
	return logs
}

// readExported reads an exported log: a .json file, or an .eval archive
// (its header.json, its samples' members in archive order, and its
// summaries.json, which must list each sample once with its scores).
func readExported(t *testing.T, file string) *exportedLog {
	t.Helper()
	var lg exportedLog
	if filepath.Ext(file) == ".json" {
		if err := json.Unmarshal(mustRead(t, file), &lg); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return &lg
	}
	zr, err := zip.OpenReader(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	defer zr.Close()
	read := func(f *zip.File, v any) {
		r, err := f.Open()
		if err == nil {
			err = json.NewDecoder(r).Decode(v)
			r.Close()
		}
		if err != nil || f.Flags&0x8 != 0 {
			t.Fatalf("%s: member %s: %v (flags %x: sizes must be in the local header)", file, f.Name, err, f.Flags)
		}
	}
	var summaries []struct {
		ID        string                     `json:"id"`
		Epoch     int64                      `json:"epoch"`
		Scores    map[string]json.RawMessage `json:"scores"`
		Completed bool                       `json:"completed"`
	}
	names := []string{}
	for _, f := range zr.File {
		names = append(names, f.Name)
		switch {
		case f.Name == "header.json":
			read(f, &lg)
		case f.Name == "summaries.json":
			read(f, &summaries)
		case strings.HasPrefix(f.Name, "samples/"):
			var s exportedSample
			read(f, &s)
			if want := fmt.Sprintf("samples/%s_epoch_%d.json", *s.ID, s.Epoch); f.Name != want {
				t.Errorf("%s: member %s holds sample %s", file, f.Name, want)
			}
			lg.Samples = append(lg.Samples, s)
		}
	}
	if len(names) < 3 || names[0] != "_journal/start.json" || names[len(names)-1] != "header.json" || len(summaries) != len(lg.Samples) {
		t.Fatalf("%s: members %v…, %d summaries of %d samples", file, names[:min(3, len(names))], len(summaries), len(lg.Samples))
	}
	for i, sum := range summaries {
		s := lg.Samples[i]
		if sum.ID != *s.ID || sum.Epoch != s.Epoch || len(sum.Scores) != len(s.Scores) || !sum.Completed {
			t.Errorf("%s: summary %d is %s/%d with %d scores, the sample %s/%d has %d", file, i, sum.ID, sum.Epoch, len(sum.Scores), *s.ID, s.Epoch, len(s.Scores))
		}
	}
	return &lg
}

// checkSample checks one sample against its decision's row and raw
// responses.
func checkSample(t *testing.T, where string, s *exportedSample, row *results.Row, responses []string) {
	t.Helper()
	id := fmt.Sprintf("%s: sample %s/%d", where, *s.ID, s.Epoch)
	if row.Status != results.StatusOK {
		if s.Error == nil || s.Error.Message == "" || len(s.Scores) != 0 {
			t.Errorf("%s: an error decision has error %v and %d scores", id, s.Error, len(s.Scores))
		}
	} else {
		if s.Error != nil {
			t.Errorf("%s: error %v on a counted decision", id, s.Error)
		}
		want := map[string]float64{inspect.ExtraScore: float64(row.Replays)}
		for c := range simulator.Columns {
			if v, ok := row.Outcome.Get(simulator.Col(c)); ok {
				want[simulator.Columns[c].Name] = float64(v)
			}
		}
		if len(s.Scores) != len(want) {
			t.Errorf("%s: %d scores, want %d", id, len(s.Scores), len(want))
		}
		for name, v := range want {
			sc, ok := s.Scores[name]
			if !ok || sc.Value == nil || *sc.Value != v || row.FinalLabel != "" && sc.Answer != row.FinalLabel {
				t.Errorf("%s: score %s = %+v, want %v answer %q", id, name, sc, v, row.FinalLabel)
			}
		}
	}
	// Every model call is a model event whose output is the raw response,
	// byte for byte; the last is the sample's output.
	var got []string
	for _, ev := range s.Events {
		var kind string
		json.Unmarshal(ev["event"], &kind)
		if _, ok := ev["timestamp"]; !ok || kind == "" {
			t.Fatalf("%s: an event without event or timestamp: %v", id, ev)
		}
		if kind != "model" {
			continue
		}
		var out struct {
			Completion string `json:"completion"`
			Choices    []struct{ Message exportedMsg }
		}
		if err := json.Unmarshal(ev["output"], &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Choices) == 1 && out.Choices[0].Message.text(t) != out.Completion {
			t.Errorf("%s: model event's message %q, completion %q", id, out.Choices[0].Message.text(t), out.Completion)
		}
		got = append(got, out.Completion)
	}
	if row.Status == results.StatusOK && !slices.Equal(got, responses) {
		t.Errorf("%s: model events' outputs %q, the bundle's responses %q", id, got, responses)
	}
	if len(responses) > 0 && s.Output.Completion != responses[len(responses)-1] {
		t.Errorf("%s: output %q, last response %q", id, s.Output.Completion, responses[len(responses)-1])
	}
	// Every attachment a message refers to is in the sample.
	for _, m := range append(append([]exportedMsg{}, s.Input...), s.Messages...) {
		var c string
		if json.Unmarshal(m.Content, &c) == nil && strings.HasPrefix(c, "attachment://") {
			if _, ok := s.Attachments[strings.TrimPrefix(c, "attachment://")]; !ok {
				t.Errorf("%s: message %s refers to %s, not in the attachments", id, m.ID, c)
			}
		}
	}
	if len(s.Messages) < len(s.Input) {
		t.Errorf("%s: %d messages, fewer than its %d input", id, len(s.Messages), len(s.Input))
	}
}

// TestExportInspect exports the built-in study, the lab study and an
// action study on the reference MCP servers as Inspect logs and reads
// them back (checkExport).
func TestExportInspect(t *testing.T) {
	dir := t.TempDir()
	def := filepath.Join(dir, "default")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", def); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	out, log, err := runCmd(t, "export", def)
	if err != nil || !strings.HasPrefix(out, "wrote "+filepath.Join(def, "inspect")+": 12 Inspect logs, 1260 samples") {
		t.Fatalf("export: %v\n%s%s", err, out, log)
	}
	logs := checkExport(t, def, filepath.Join(def, "inspect"))
	for _, lg := range logs {
		s := lg.Samples[0]
		if s.Metadata["cause"] == nil || s.Metadata["surface"] == nil || s.Metadata["server"] == nil || s.Metadata["seed"] == nil {
			t.Errorf("the default study's sample metadata %v lacks a scenario field", s.Metadata)
		}
	}
	// Exported again into the same directory: replaced as a whole, the
	// same bytes.
	before := mustRead(t, filepath.Join(def, "inspect", inspect.ListingFile))
	if _, _, err := runCmd(t, "export", "-quiet", def); err != nil || string(mustRead(t, filepath.Join(def, "inspect", inspect.ListingFile))) != string(before) {
		t.Errorf("export again: %v", err)
	}

	lab := filepath.Join(dir, "lab")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", lab, "../../manifests/lab.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if _, _, err := runCmd(t, "export", "-quiet", "-out", filepath.Join(dir, "lab-logs"), lab); err != nil {
		t.Fatal(err)
	}
	labLogs := checkExport(t, lab, filepath.Join(dir, "lab-logs"))
	// The same logs as .eval archives.
	if _, _, err := runCmd(t, "export", "-quiet", "-eval", "-out", filepath.Join(dir, "lab-eval"), lab); err != nil {
		t.Fatal(err)
	}
	for name, lg := range checkExport(t, lab, filepath.Join(dir, "lab-eval")) {
		js := labLogs[strings.TrimSuffix(name, ".eval")+".json"]
		if js == nil || len(js.Samples) != len(lg.Samples) || !reflect.DeepEqual(js.Results, lg.Results) || !reflect.DeepEqual(js.Samples, lg.Samples) {
			t.Errorf("%s: differs from its .json log", name)
		}
	}
	tools := 0
	for _, lg := range labLogs {
		if len(lg.Results.Scores) < len(simulator.Columns)+1 {
			t.Errorf("a lab log has %d scores, want every column and extra", len(lg.Results.Scores))
		}
		for _, s := range lg.Samples {
			if s.Metadata["env"] == nil {
				t.Fatalf("a lab sample lacks the environment's outcome: %v", s.Metadata)
			}
			for _, ev := range s.Events {
				if string(ev["event"]) == `"tool"` {
					tools++
				}
			}
		}
	}
	if tools == 0 {
		t.Error("no tool event in the lab study's logs (the policies the lab executed)")
	}

	if testing.Short() {
		return
	}
	mods, _ := filepath.Abs("../../scripts/mcp-servers/node_modules/@modelcontextprotocol")
	t.Setenv(mcpenv.ServersVar, mods)
	act := filepath.Join(dir, "act")
	file := filepath.Join(dir, "act.yaml")
	corpus, _ := filepath.Abs("../../manifests/corpus/act-reference")
	writeActManifest(t, file, corpus, "normalized, structured", "repair", "schema_repair", "retry", "naive_retry")
	start := time.Now()
	if _, log, err := runCmd(t, "run", "-quiet", "-out", act, file); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	t.Logf("the action study on the reference servers ran in %v", time.Since(start))
	if _, _, err := runCmd(t, "export", "-quiet", act); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, lg := range checkExport(t, act, filepath.Join(act, "inspect")) {
		for _, s := range lg.Samples {
			for i, m := range s.Messages {
				for _, tc := range m.ToolCalls {
					calls++
					if i+1 >= len(s.Messages) || s.Messages[i+1].Role != "tool" || s.Messages[i+1].ToolCallID != tc.ID {
						t.Errorf("sample %s: tool call %s is not followed by its result", *s.ID, tc.ID)
					}
				}
			}
		}
	}
	if calls == 0 {
		t.Error("the action study's logs hold no tool call")
	}
}

// TestExportBadInput: a bundle of error decisions exports them as
// samples with their error and no scores (their transport faults as info
// events) and maps a model id Inspect file names cannot hold; a damaged
// bundle, an output directory holding other files, an unknown format and
// a missing bundle are refused, naming the file, flag or directory, and
// nothing is written.
func TestExportBadInput(t *testing.T) {
	dir := downBundle(t, "x:1/y z")
	out := filepath.Join(t.TempDir(), "logs")
	if _, _, err := runCmd(t, "export", "-quiet", "-out", out, dir); err != nil {
		t.Fatal(err)
	}
	logs := checkExport(t, dir, out)
	if len(logs) != 1 {
		t.Fatalf("%d logs", len(logs))
	}
	for name, lg := range logs {
		if !strings.Contains(name, "_echohttp-x-1-y-z_") || lg.Eval.Model != "echohttp/x:1/y z" {
			t.Errorf("log %s of model %q: want the model id mapped in the file name, kept in the log", name, lg.Eval.Model)
		}
		if lg.Results.CompletedSamples != 0 || len(lg.Samples) != 3 {
			t.Errorf("completed %d of %d samples, want 0 of 3", lg.Results.CompletedSamples, len(lg.Samples))
		}
		for _, s := range lg.Samples {
			infos := 0
			for _, ev := range s.Events {
				if string(ev["event"]) == `"info"` && string(ev["source"]) == `"transport"` {
					infos++
				}
			}
			if s.Error == nil || !strings.Contains(s.Error.Message, "HTTP 500") || infos != 2 {
				t.Errorf("error sample %s: error %v, %d transport events, want the HTTP 500 and 2", *s.ID, s.Error, infos)
			}
		}
	}

	// A bundle whose calls.jsonl was changed is refused as analyze
	// refuses it, and no output is left.
	def := filepath.Join(t.TempDir(), "default")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", def); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	calls := filepath.Join(def, results.CallsFile)
	b := mustRead(t, calls)
	os.WriteFile(calls, []byte(strings.Replace(string(b), `"recovery_policy\":\"stop_or_escalate\"}"`, `"recovery_policy\":\"retry_now\"}"`, 1)), 0o644)
	_, log, err := runCmd(t, "export", def)
	if err == nil || !strings.Contains(err.Error(), results.CallsFile) || !strings.Contains(log, "problem: "+calls+":1:") {
		t.Errorf("export of a damaged bundle: %v\n%s", err, log)
	}
	if entries, _ := os.ReadDir(def); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.Contains(e.Name(), "inspect") }) {
		t.Errorf("a refused export left %v", entries)
	}
	os.WriteFile(calls, b, 0o644)

	// An output directory holding a file export did not write.
	foreign := filepath.Join(t.TempDir(), "mine")
	os.MkdirAll(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("keep"), 0o644)
	_, _, err = runCmd(t, "export", "-out", foreign, def)
	if err == nil || !strings.Contains(err.Error(), "flag -out: output directory "+foreign+" is not empty (it holds notes.txt") {
		t.Errorf("export into a directory of other files: %v", err)
	}
	if got := mustReadDir(t, foreign); !slices.Equal(got, []string{"notes.txt"}) || string(mustRead(t, filepath.Join(foreign, "notes.txt"))) != "keep" {
		t.Errorf("the directory now holds %v", got)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "-format", "csv", def}, `export: flag -format: want inspect, got "csv"`},
		{[]string{"export", def, def}, "export: want one bundle directory, got 2 arguments"},
		{[]string{"export", filepath.Join(def, "nope")}, filepath.Join(def, "nope", results.ManifestFile)},
	} {
		t.Run(argsName(c.args), func(t *testing.T) {
			if _, _, err := runCmd(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: %v, want %q", c.args, err, c.want)
			}
		})
	}
}

// TestExportInInspectViewer opens the exported logs of an action study
// in Inspect's own log viewer (npm @metrevals/inspect-log-viewer, built
// by esbuild and driven in headless Chromium by
// scripts/inspect-viewer/check.mjs): the list shows every log, each log
// its sample count and its cell's scores as analyze -json counts them,
// and one decision's sample its input, raw output and tool calls as the
// bundle holds them; no console error, no dialog, no request beyond
// 127.0.0.1. Without Chromium or the script's packages it skips, except
// under CI=true, where it fails (.ci/run installs Chromium, scripts/test
// the packages).
func TestExportInInspectViewer(t *testing.T) {
	script, chromium := needBrowser(t, "../../scripts/inspect-viewer/check.mjs", "@metrevals/inspect-log-viewer")
	// An action study on four of the lab's failures: two models, two
	// replicates, so two logs of eight samples.
	dir := t.TempDir()
	var recs []json.RawMessage
	if err := json.Unmarshal(mustRead(t, "../../manifests/corpus/lab/L01.json"), &recs); err != nil {
		t.Fatal(err)
	}
	four, _ := json.Marshal([]json.RawMessage{recs[0], recs[9], recs[10], recs[11]}) // X01 transient, X29 unknown tool, X31 invalid type, X35 invalid value
	os.WriteFile(filepath.Join(dir, "corpus.json"), four, 0o644)
	prompt, _ := filepath.Abs("../../manifests/prompts/act.tmpl")
	man := filepath.Join(dir, "act.yaml")
	os.WriteFile(man, []byte(`name: act-view
corpus: corpus.json
prompts: [{name: act, path: `+prompt+`}]
conditions: [normalized]
replicates: 2
seed: 7
replay: live
environment: lab
task: act
models:
  - {name: schema_repair, backend: baseline, model: schema_repair}
  - {name: naive_retry, backend: baseline, model: naive_retry}
`), 0o644)
	bundle := filepath.Join(dir, "run")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", bundle, man); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	calls, err := results.ReadCalls(filepath.Join(bundle, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	// The sample each log shows: the first decision of its model with a
	// tool call.
	pick := func(t *testing.T, l inspect.IndexLog) simulator.Key {
		for _, c := range calls {
			if c.Key.Model == l.Model && c.Action != nil {
				return c.Key
			}
		}
		t.Fatalf("no decision of %s with a tool call", l.Model)
		return simulator.Key{}
	}
	// The logs as .json files, then as .eval archives (which the viewer
	// reads member by member, with Range requests).
	for _, form := range []string{"json", "eval"} {
		t.Run(form+" logs", func(t *testing.T) {
			site := filepath.Join(dir, form)
			want := exportForViewer(t, bundle, site, form == "eval", "baseline/", calls, pick)
			got := runViewer(t, script, chromium, site, want)
			if len(got.Checks) < 20 || len(got.Screenshots) != 1+2*len(want.Logs) {
				t.Errorf("%d checks and %d screenshots (%v)", len(got.Checks), len(got.Screenshots), got.Screenshots)
			}
			t.Logf("%s logs in the viewer: %d checks passed; timings %v ms; screenshots in %s", form, len(got.Checks), got.Timings, filepath.Join(site, "shots"))
			if keep := os.Getenv("STRESS_KEEP_SHOTS"); keep != "" {
				os.CopyFS(filepath.Join(keep, form), os.DirFS(filepath.Join(site, "shots")))
			}
		})
	}
}

// hostileAnswer is a model's answer that would run script, load remote
// content and fetch a remote URL if a viewer rendered it as HTML or
// followed its markdown: an img whose onerror calls alert and fetch, a
// remote iframe, a remote markdown image and a javascript: link. The
// remote host is in TEST-NET-2 (RFC 5737), which nothing answers.
const hostileAnswer = "HOSTILE-ANSWER-46 follows\n\n" +
	`<img src="http://198.51.100.7/img.png" onerror="alert('img onerror');fetch('http://198.51.100.7/fetch')">` +
	`<iframe src="http://198.51.100.7/frame"></iframe><script>alert('script')</script>` + "\n\n" +
	"![pixel](" + hostileImage + ")\n\n" +
	"[click me](javascript:alert('link'))\n\n" +
	`{"operation_status":"failed","recovery_policy":"retry_later"}`

// hostileImage is hostileAnswer's markdown image.
const hostileImage = "http://198.51.100.7/pixel.png"

// TestExportHostileInInspectViewer opens, in Inspect's viewer as
// scripts/inspect-viewer builds it, the logs of a study whose model
// fails half its decisions (error samples, whose scores are null) and
// answers the others with hostileAnswer: the log opens (its sample
// count and scores), the hostile sample opens with its input and
// output, its javascript: link is clicked, and no dialog opens, no
// request leaves 127.0.0.1, no page error is raised; the remote image
// is refused by the page's Content-Security-Policy.
func TestExportHostileInInspectViewer(t *testing.T) {
	script, chromium := needBrowser(t, "../../scripts/inspect-viewer/check.mjs", "@metrevals/inspect-log-viewer")
	// Two models (the viewer opens a lone log at once, without its
	// list); decisions of an even seed fail (HTTP 500), the others get
	// the hostile answer.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req models.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Seed%2 == 0 {
			http.Error(w, `{"error":"down"}`, http.StatusInternalServerError)
			return
		}
		b, _ := json.Marshal(map[string]string{"text": hostileAnswer})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	study := filepath.Join(dir, "study")
	if err := synth.Write(context.Background(), study, synth.Options{Scenarios: 6, Servers: 1, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(study, "hostile.yaml")
	os.WriteFile(man, []byte(`name: hostile
corpus: corpus
prompts: [{name: default, path: prompts/default.tmpl}]
conditions: [normalized]
replicates: 1
seed: 3
models:
  - {name: hostile, backend: echohttp, model: hostile, host: `+srv.URL+`, transport: {attempts: 1, breaker_after: 100}}
  - {name: hostile_too, backend: echohttp, model: hostile_too, host: `+srv.URL+`, transport: {attempts: 1, breaker_after: 100}}
`), 0o644)
	bundle := filepath.Join(dir, "run")
	if _, log, err := runCmd(t, "run", "-quiet", "-out", bundle, man); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	calls, err := results.ReadCalls(filepath.Join(bundle, results.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	var errs, hostile int
	for _, c := range calls {
		if c.Error != "" {
			errs++
		} else if c.Response == hostileAnswer {
			hostile++
		}
	}
	if errs == 0 || hostile == 0 {
		t.Fatalf("%d error calls and %d hostile answers, want both", errs, hostile)
	}
	pick := func(t *testing.T, l inspect.IndexLog) simulator.Key {
		for _, c := range calls {
			if c.Key.Model == l.Model && c.Response == hostileAnswer {
				return c.Key
			}
		}
		return simulator.Key{}
	}
	for _, form := range []string{"json", "eval"} {
		t.Run(form+" logs", func(t *testing.T) {
			site := filepath.Join(dir, form)
			want := exportForViewer(t, bundle, site, form == "eval", "echohttp/", calls, pick)
			want.RemoteImage = hostileImage
			got := runViewer(t, script, chromium, site, want)
			t.Logf("%s logs in the viewer: %d checks passed; timings %v ms; screenshots in %s", form, len(got.Checks), got.Timings, filepath.Join(site, "shots"))
		})
	}
}

// viewerWant is what check.mjs checks the viewer shows (its EXPECT).
type viewerWant struct {
	Logs []viewerLog `json:"logs"`
	// RemoteImage is the remote markdown image of a hostile answer, the
	// samples': check.mjs clicks their javascript: links and expects the
	// image refused; "" when the answers are not hostile.
	RemoteImage string `json:"remote_image,omitempty"`
}

// viewerLog is one log as the viewer shows it.
type viewerLog struct {
	File    string        `json:"file"`
	Task    string        `json:"task"`
	Model   string        `json:"model"`
	Samples int           `json:"samples"`
	Scores  []viewerScore `json:"scores"`
	Sample  struct {
		ID        string   `json:"id"`
		Epoch     int      `json:"epoch"`
		Input     []string `json:"input"`
		Output    string   `json:"output"`
		ToolCalls []string `json:"tool_calls"`
	} `json:"sample"`
}

// viewerScore is one row of a log's scores as the viewer shows it.
type viewerScore struct {
	Name  string  `json:"name"`
	Mean  float64 `json:"mean"`
	Count float64 `json:"count"`
}

// exportForViewer exports bundle (as .eval archives when eval) into
// site/logs and returns what the viewer must show of it: per log its
// first four scores as analyze -json counts them, and the sample of the
// decision pick chooses (its first request's user messages, its last
// response, its tool calls), from the bundle's calls; provider prefixes
// the models' names.
func exportForViewer(t *testing.T, bundle, site string, eval bool, provider string, calls []results.Call, pick func(*testing.T, inspect.IndexLog) simulator.Key) viewerWant {
	t.Helper()
	args := []string{"export", "-quiet", "-out", filepath.Join(site, "logs"), bundle}
	if eval {
		args = append(args[:1], append([]string{"-eval"}, args[1:]...)...)
	}
	if _, _, err := runCmd(t, args...); err != nil {
		t.Fatal(err)
	}
	js, _, err := runCmd(t, "analyze", "-json", "-b", "10", bundle)
	if err != nil {
		t.Fatal(err)
	}
	var an struct{ Cells []map[string]any }
	json.Unmarshal([]byte(js), &an)
	var ix inspect.Index
	json.Unmarshal(mustRead(t, filepath.Join(site, "logs", inspect.IndexFile)), &ix)
	var want viewerWant
	for _, l := range ix.Logs {
		lw := viewerLog{File: l.File, Task: l.Task, Model: provider + l.Model, Samples: l.Samples}
		for _, c := range an.Cells {
			if c["model"] != l.Model || c["prompt"] != l.Prompt || c["condition"] != l.Condition {
				continue
			}
			// The log's header shows its first four scores.
			for _, name := range []string{"strict", "proven", "cover", "retry"} {
				k, n := c[name].(float64), c["n"].(float64)
				lw.Scores = append(lw.Scores, viewerScore{name, k / n, k})
			}
		}
		key := pick(t, l)
		if key.Model == "" {
			t.Fatalf("log %s: no decision to show", l.File)
		}
		s := &lw.Sample
		s.ID, s.Epoch = key.Scenario, key.Replicate
		for _, c := range calls {
			if c.Key != key {
				continue
			}
			if c.Turn == 0 {
				for _, m := range c.Request.Messages {
					if m.Role == "user" {
						s.Input = append(s.Input, m.Content)
					}
				}
			}
			s.Output = c.Response
			if c.Action != nil {
				s.ToolCalls = append(s.ToolCalls, c.Action.Tool)
			}
		}
		want.Logs = append(want.Logs, lw)
	}
	return want
}

// viewerReport is what check.mjs prints.
type viewerReport struct {
	OK          bool              `json:"ok"`
	Failed      []string          `json:"failed"`
	Checks      []json.RawMessage `json:"checks"`
	Screenshots []string          `json:"screenshots"`
	Timings     map[string]int    `json:"timings_ms"`
}

// runViewer runs check.mjs on site (its logs in site/logs) against want,
// its screenshots in site/shots, and fails t unless every check passed.
func runViewer(t *testing.T, script, chromium, site string, want viewerWant) viewerReport {
	t.Helper()
	expect := filepath.Join(site, "expect.json")
	b, _ := json.Marshal(want)
	os.WriteFile(expect, b, 0o644)
	cmd := exec.Command("node", script, site, filepath.Join(site, "shots"), expect)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var got viewerReport
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node %s: %v (%v)\n%s\n%s", script, runErr, err, out, stderr.String())
	}
	if !got.OK || runErr != nil {
		t.Errorf("%s: the viewer failed %d of %d checks: %s\n%s", site, len(got.Failed), len(got.Checks), strings.Join(got.Failed, "\n"), out)
	}
	return got
}
