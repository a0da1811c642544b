package results

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpstress/stress/simulator"
	"github.com/parquet-go/parquet-go"
)

// oldRow is a decisions.parquet row as written before the invalid_action
// column existed (the live columns without it).
type oldRow struct {
	Model     string `parquet:"model"`
	Scenario  string `parquet:"scenario"`
	Replicate int64  `parquet:"replicate"`
	Status    string `parquet:"status"`
	Strict    bool   `parquet:"strict"`
	Recovered *bool  `parquet:"recovered,optional"`
	Harm      *bool  `parquet:"harm,optional"`
	Calls     *int64 `parquet:"calls,optional"`
	LabMS     *int64 `parquet:"lab_ms,optional"`
}

// TestReadOlderParquet: rows of a file written before invalid_action read
// as today's: a live decision has none (false), a stored one stays null;
// the other columns are kept.
func TestReadOlderParquet(t *testing.T) {
	yes, n, ms := true, int64(2), int64(40)
	file := filepath.Join(t.TempDir(), DecisionsFile)
	if err := parquet.WriteFile(file, []oldRow{
		{Model: "m", Scenario: "X01", Replicate: 1, Status: StatusOK, Strict: true, Recovered: &yes, Harm: new(bool), Calls: &n, LabMS: &ms},
		{Model: "m", Scenario: "S01", Replicate: 1, Status: StatusOK},
	}); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadRows(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	live, stored := rows[0], rows[1]
	if v, ok := live.Outcome.Get(simulator.InvalidAction); !ok || v != 0 || !live.Outcome.Of(simulator.Recovered) || live.Outcome.Value(simulator.Calls) != 2 || !live.Outcome.Of(simulator.Strict) {
		t.Errorf("live row %+v", live)
	}
	if stored.Lab() {
		t.Errorf("stored row %+v has lab columns", stored)
	}
}

// oldBundle copies the checked-in bundle runner/testdata/FORMAT/NAME into
// a temporary directory.
func oldBundle(t *testing.T, format, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "runner", "testdata", format, name))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestUpgradeLossless: every call line of a format-1 and a format-2
// bundle reads back from the upgraded bundle as the same JSON value (a
// format-2 request's refs expanded, its seed the line's when left out),
// in the same place; the new lines leave out what defaults.json holds.
func TestUpgradeLossless(t *testing.T) {
	for _, tc := range []struct{ format, name string }{{"format1", "hash-small"}, {"format2", "lab"}} {
		t.Run(tc.format+" bundle "+tc.name, func(t *testing.T) {
			old := oldBundle(t, tc.format, tc.name)
			out := filepath.Join(t.TempDir(), "new")
			var log bytes.Buffer
			rec, err := Upgrade(context.Background(), old, out, &log)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Format != Format || rec.Upgraded == nil || rec.Upgraded.Format != int(tc.format[6]-'0') || !strings.Contains(log.String(), "upgraded "+old) {
				t.Errorf("%s: record %+v, log %q", tc.name, rec.Upgraded, log.String())
			}
			var table *Messages
			if tc.format == "format2" {
				if table, err = LoadMessages(filepath.Join(old, MessagesFile), -1); err != nil {
					t.Fatal(err)
				}
			}
			b, _ := os.ReadFile(filepath.Join(old, CallsFile))
			lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
			calls, err := ReadCalls(filepath.Join(out, CallsFile))
			if err != nil || len(calls) != len(lines) {
				t.Fatalf("%s: %d calls, %d old lines: %v", tc.name, len(calls), len(lines), err)
			}
			for i, line := range lines {
				var want, got map[string]any
				json.Unmarshal(line, &want)
				req := want["request"].(map[string]any)
				if refs, ok := req["messages_ref"].([]any); ok {
					var ids []string
					for _, r := range refs {
						ids = append(ids, r.(string))
					}
					ms, err := table.Expand(ids)
					if err != nil {
						t.Fatal(err)
					}
					mb, _ := json.Marshal(ms)
					var v any
					json.Unmarshal(mb, &v)
					req["messages"] = v
					delete(req, "messages_ref")
				}
				if _, ok := req["seed"]; !ok {
					req["seed"] = want["seed"]
				}
				cb, _ := json.Marshal(&calls[i])
				json.Unmarshal(cb, &got)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: line %d:\n%s\nreads back as\n%s", tc.name, i+1, line, cb)
				}
			}
			nb, _ := os.ReadFile(filepath.Join(out, CallsFile))
			if bytes.Contains(nb, []byte(`"server"`)) || bytes.Contains(nb, []byte(`"messages"`)) {
				t.Errorf("%s: the upgraded lines carry their scenario's fields or their messages", tc.name)
			}
		})
	}
}

// TestUpgradeRefused: upgrade refuses a bundle of this version's format,
// an output directory that is not empty or lies inside the bundle, a
// damaged line that is not the last, and a bundle in which a scenario has
// no line; it writes nothing then. A torn last line is left out.
func TestUpgradeRefused(t *testing.T) {
	old := oldBundle(t, "format1", "hash-small")
	root := t.TempDir()
	out := filepath.Join(root, "new")
	if _, err := Upgrade(context.Background(), old, out, io.Discard); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	calls, _ := os.ReadFile(filepath.Join(old, CallsFile))
	lines := bytes.SplitAfter(calls, []byte("\n"))
	lines = lines[:len(lines)-1]
	var noS21 []byte
	for _, l := range lines {
		if !bytes.Contains(l, []byte(`"scenario":"S21"`)) {
			noS21 = append(noS21, l...)
		}
	}
	for _, tc := range []struct {
		name, dir, out string
		calls          []byte // calls.jsonl of old, when not nil
		want           string
	}{
		{"format 3", out, filepath.Join(root, "again"), nil, out + " is a bundle of format 3 already, the one this version reads: nothing to upgrade"},
		{"out not empty", old, full, nil, "output directory " + full + " is not empty (it holds x"},
		{"out inside", old, filepath.Join(old, "new"), nil, "output directory " + filepath.Join(old, "new") + " is inside the bundle " + old},
		{"damaged", old, filepath.Join(root, "damaged"), bytes.Replace(calls, []byte(`"turn":0`), []byte(`"turn":`), 1), CallsFile + ":1: invalid character"},
		{"no line of S21", old, filepath.Join(root, "noS21"), noS21, "no call line of scenario S21"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.calls != nil {
				os.WriteFile(filepath.Join(old, CallsFile), tc.calls, 0o644)
			}
			_, err := Upgrade(context.Background(), tc.dir, tc.out, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			}
			if _, err := os.Stat(tc.out); tc.out != full && !os.IsNotExist(err) {
				t.Errorf("%s: %s was written", tc.name, tc.out)
			}
			os.WriteFile(filepath.Join(old, CallsFile), calls, 0o644)
		})
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.Contains(e.Name(), "partial") {
			t.Errorf("a temporary directory was left: %s", e.Name())
		}
	}

	// A torn last line is left out, and said.
	os.WriteFile(filepath.Join(old, CallsFile), calls[:len(calls)-20], 0o644)
	var log bytes.Buffer
	if _, err := Upgrade(context.Background(), old, filepath.Join(root, "torn"), &log); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCalls(filepath.Join(root, "torn", CallsFile))
	if err != nil || len(got) != len(lines)-1 || !strings.Contains(log.String(), fmt.Sprintf("%d call lines; its torn last line (%d bytes) was left out", len(lines)-1, len(lines[len(lines)-1])-20)) {
		t.Errorf("torn last line: %d calls of %d, %v, log %q", len(got), len(lines), err, log.String())
	}
}
