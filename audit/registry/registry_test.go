package registry

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readPages decodes the two fixture pages (real-format records of the
// official registry's API) as one snapshot.
func readPages(t *testing.T) []Record {
	t.Helper()
	var all []Record
	for _, f := range []string{"page-1.json", "page-2.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		recs, errs := Decode(f, data)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", f, errs)
		}
		all = append(all, recs...)
	}
	return all
}

// frameLines renders a frame's entries and rejections for comparison.
func frameLines(f *Frame) string {
	var b strings.Builder
	for _, e := range f.Entries {
		fmt.Fprintf(&b, "%s %s %v %v %v\n", e.Repository, e.Stratum, e.Servers, e.RegistryTypes, e.Remotes)
	}
	for _, r := range f.Rejected {
		fmt.Fprintf(&b, "rejected %s %s: %s\n", r.Name, r.Version, r.Reason)
	}
	return b.String()
}

// TestBuildFrame derives the frame of the fixture pages: the latest
// version of each server (1.2.0 of acme/weather, not 1.1.0), one entry per
// GitHub repository whatever the URL's form (the https, ssh and
// upper-case forms of acme/weather-mcp are one repository, holding both
// acme servers: npm wins over oci), records without a repository or on
// another host rejected, and the server the registry marks deleted left
// out (its publisher no longer lists it) unless IncludeDeleted keeps it.
func TestBuildFrame(t *testing.T) {
	f := BuildFrame(readPages(t), FrameOptions{})
	frame := `github.com/acme/weather-mcp npm [io.github.acme/weather io.github.acme/weather-alerts] [npm oci] true
github.com/bundler/desktop-notes mcpb [io.github.bundler/desktop-notes] [mcpb] false
github.com/dotnetter/calendar-mcp other [io.github.dotnetter/calendar] [nuget] false
github.com/example-corp/tickets-mcp remote [com.example/tickets] [] true
github.com/pyfolk/sqlite-explorer pypi [io.github.pyfolk/sqlite-explorer] [oci pypi] false
`
	deleted := "github.com/spammer/free-credits remote [io.github.spammer/free-credits] [] true\n"
	rejected := "rejected ai.hosted/search 1.0.0: no repository\n"
	gitlab := "rejected io.gitlab.someone/wiki 1.0.0: not a GitHub repository\n"
	want := frame + rejected + "rejected io.github.spammer/free-credits 1.0.0: status deleted\n" + gitlab
	if got := frameLines(f); got != want {
		t.Errorf("frame:\n%s\nwant:\n%s", got, want)
	}
	if f.Records != 10 || f.Servers != 9 || f.KeptDeleted != 0 {
		t.Errorf("records %d, servers %d, kept deleted %d; want 10, 9 and 0", f.Records, f.Servers, f.KeptDeleted)
	}
	if f.Statuses["active"] != 8 || f.Statuses["deleted"] != 1 {
		t.Errorf("statuses %v", f.Statuses)
	}
	if r := f.Rejected[1]; r.URL != "https://github.com/spammer/free-credits" || r.At.Line == 0 {
		t.Errorf("the deleted server's rejection: %+v", r)
	}
	f = BuildFrame(readPages(t), FrameOptions{IncludeDeleted: true})
	if got, want := frameLines(f), frame+deleted+rejected+gitlab; got != want || f.KeptDeleted != 1 {
		t.Errorf("IncludeDeleted: kept %d, frame:\n%s\nwant:\n%s", f.KeptDeleted, got, want)
	}
}

// entries returns the entries of the fixture pages as raw JSON.
func entries(t *testing.T) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, f := range []string{"page-1.json", "page-2.json"} {
		data, _ := os.ReadFile(filepath.Join("testdata", f))
		var p struct{ Servers []json.RawMessage }
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Servers...)
	}
	return out
}

// TestDecodeFormats reads the same records as API pages, as one JSON
// array, as JSON lines, as bare server.json records carrying their own
// _meta, and as two pages one a line: the frame is the same.
func TestDecodeFormats(t *testing.T) {
	want := frameLines(BuildFrame(readPages(t), FrameOptions{}))
	es := entries(t)
	array, _ := json.Marshal(es)
	var lines, bare bytes.Buffer
	for _, e := range es {
		var c bytes.Buffer
		json.Compact(&c, e)
		lines.Write(c.Bytes())
		lines.WriteByte('\n')
		var w struct {
			Server map[string]any `json:"server"`
			Meta   map[string]any `json:"_meta"`
		}
		json.Unmarshal(e, &w)
		w.Server["_meta"] = w.Meta
		b, _ := json.Marshal(w.Server)
		bare.Write(b)
		bare.WriteByte('\n')
	}
	var pages bytes.Buffer
	for _, f := range []string{"page-1.json", "page-2.json"} {
		data, _ := os.ReadFile(filepath.Join("testdata", f))
		json.Compact(&pages, data)
		pages.WriteByte('\n')
	}
	for name, data := range map[string][]byte{"array": array, "jsonl": lines.Bytes(), "bare": bare.Bytes(), "pages.jsonl": pages.Bytes()} {
		t.Run(name, func(t *testing.T) {
			recs, errs := Decode(name, data)
			if len(errs) > 0 {
				t.Errorf("%s: %v", name, errs)
			}
			if got := frameLines(BuildFrame(recs, FrameOptions{})); got != want {
				t.Errorf("%s: frame\n%s\nwant\n%s", name, got, want)
			}
		})
	}
}

// TestDecodeErrors: every bad record or file is reported with its file,
// line and record (and name when it has one), and the records around it
// are read on.
func TestDecodeErrors(t *testing.T) {
	good := `{"server":{"name":"io.github.a/ok","version":"1.0.0","repository":{"url":"https://github.com/a/ok"}}}`
	for _, tc := range []struct {
		name, data string
		records    int
		want       []string
	}{
		{"truncated page", "{\"servers\": [\n" + good + ",\n" + good + ",\n{\"server\": {\"name\": \"io.github.a/cut\",", 2,
			[]string{"truncated page:4: column"}},
		{"page with a bad token", "{\"servers\": [\n" + good + ",\n  {\"server\": nope}\n]}", 1,
			[]string{"page with a bad token:3: column 15: malformed JSON: invalid character 'o' in literal null (expecting 'u')"}},
		{"no name", "[\n" + good + ",\n{\"server\":{\"version\":\"1\"}}\n]", 1,
			[]string{`no name:3: record 2: record without a name`}},
		{"wrong type", "[\n" + good + ",\n{\"server\":{\"name\":\"io.github.a/typed\",\"repository\":\"https://github.com/a/typed\"}}\n]", 1,
			[]string{`wrong type:3: record 2 ("io.github.a/typed"): malformed record: json: cannot unmarshal string into Go struct field`}},
		{"not an object", "[\n" + good + ",\n42\n]", 1,
			[]string{`not an object:3: record 2: an entry is "42", not a JSON object`}},
		{"jsonl with a bad line", good + "\n{\"server\": \n" + good + "\n", 2,
			[]string{"jsonl with a bad line:2: column"}},
		{"empty", "  \n", 0, []string{"empty:1: no records: the file is empty"}},
		{"utf16", "\xff\xfe{\x00", 0, []string{"utf16:1: file is UTF-16 (little-endian); save it as UTF-8"}},
		{"scalar", "true", 0, []string{`scalar:1: want a page, an array of entries or an entry (a JSON object), got "true"`}},
		{"count", `{"servers":[` + good + `],"metadata":{"count":2}}`, 1,
			[]string{"count:1: page metadata.count is 2 but the page holds 1 entries"}},
		{"servers not an array", `{"servers":{"a":1},"metadata":{}}`, 0,
			[]string{`servers not an array:1: page member "servers" is not an array`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, errs := Decode(tc.name, []byte(tc.data))
			if len(recs) != tc.records {
				t.Errorf("%s: %d records, want %d", tc.name, len(recs), tc.records)
			}
			if len(errs) != len(tc.want) {
				t.Errorf("%s: errors %v, want %d", tc.name, errs, len(tc.want))
				return
			}
			for i, err := range errs {
				var re *RecordError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want[i]) {
					t.Errorf("%s: error %q, want a *RecordError containing %q", tc.name, err, tc.want[i])
				}
			}
		})
	}
}

// TestNormalizeGitHub: the URL forms registry records use all name one
// repository; other hosts and non-repository URLs are errors.
func TestNormalizeGitHub(t *testing.T) {
	for _, u := range []string{
		"https://github.com/Acme/Weather-MCP",
		"http://github.com/acme/weather-mcp/",
		"https://www.github.com/acme/weather-mcp.git",
		"git+https://github.com/acme/weather-mcp.git",
		"git@github.com:acme/weather-mcp.git",
		"ssh://git@github.com/acme/weather-mcp",
		"git://github.com/acme/weather-mcp",
		"github.com/acme/weather-mcp",
		"https://GitHub.com/acme/weather-mcp/tree/main/src/server#readme",
		"https://github.com/acme/weather-mcp?tab=readme-ov-file",
		"  https://github.com:443/acme//weather-mcp  ",
	} {
		t.Run(u, func(t *testing.T) {
			got, err := NormalizeGitHub(u)
			if err != nil || got != "github.com/acme/weather-mcp" {
				t.Errorf("NormalizeGitHub(%q) = %q, %v", u, got, err)
			}
		})
	}
	for u, want := range map[string]string{
		"https://gitlab.com/acme/weather-mcp":  "not a GitHub repository",
		"https://github.com.evil.example/a/b":  "not a GitHub repository",
		"https://github.com/acme":              "without an owner and a repository name",
		"https://github.com/{owner}/{repo}":    "not a GitHub owner/repository name",
		"":                                     "empty repository URL",
		"https://github.com/acme/..":           "not a GitHub owner/repository name",
		"https://bitbucket.org/acme/weather-m": "not a GitHub repository",
	} {
		t.Run(cmp.Or(u, "empty URL"), func(t *testing.T) {
			if got, err := NormalizeGitHub(u); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("NormalizeGitHub(%q) = %q, %v; want an error containing %q", u, got, err, want)
			}
		})
	}
}

// TestKey pins the ordering key against values computed by Python's
// hashlib and coreutils' sha256sum:
//
//	python3 -c 'import hashlib; print(hashlib.sha256(b"stress-sample/v1\0" b"20260819" b"\0" b"github.com/acme/weather-mcp").hexdigest())'
//	printf 'stress-sample/v1\00020260819\000github.com/acme/weather-mcp' | sha256sum
func TestKey(t *testing.T) {
	for repo, want := range map[string]string{
		"github.com/acme/weather-mcp":             "b0710d2c4817a95bbab665f877889bdbb1b7035a5923eeb227cdf263f89425a2",
		"github.com/modelcontextprotocol/servers": "13f21d7947438b02ac27281b5da2d601087679baebe651db5185470799870b01",
	} {
		t.Run(repo, func(t *testing.T) {
			if got := orderKey(DefaultSeed, repo); got != want {
				t.Errorf("Key(%d, %s) = %s, want %s", DefaultSeed, repo, got, want)
			}
		})
	}
}

func TestParseStrata(t *testing.T) {
	a, err := ParseStrata(PaperStrata)
	if err != nil || a.String() != PaperStrata || a[stratumRemoteOnly] != 12 || a[stratumOCI] != 6 {
		t.Errorf("ParseStrata(%q) = %v, %v", PaperStrata, a, err)
	}
	for s, want := range map[string]string{
		"npm=1,npm=2": "stratum npm given twice",
		"rust=3":      `unknown stratum "rust"`,
		"npm":         `"npm": want STRATUM=N`,
		"npm=-1":      "want a count from 0 to 1000000",
		"":            "no strata",
	} {
		t.Run(cmp.Or(s, "empty"), func(t *testing.T) {
			if _, err := ParseStrata(s); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ParseStrata(%q): %v, want an error containing %q", s, err, want)
			}
		})
	}
}

// syntheticFrame returns n repositories per stratum.
func syntheticFrame(n map[string]int) []FrameEntry {
	var out []FrameEntry
	for _, s := range strata {
		for i := 0; i < n[s]; i++ {
			repo := fmt.Sprintf("github.com/%s-owner/repo-%03d", s, i)
			out = append(out, FrameEntry{Repository: repo, Stratum: s, Servers: []string{"io.github." + s + "/" + fmt.Sprint(i)}, RegistryTypes: []string{}})
		}
	}
	slices.SortFunc(out, func(a, b FrameEntry) int { return strings.Compare(a.Repository, b.Repository) })
	return out
}

// TestDrawSample checks the draw against the rule written out: each
// stratum's repositories sorted by Key; the first k drawn; an excluded
// draw replaced by the next repository in the order that is neither
// excluded nor drawn (an excluded would-be replacement is skipped); a
// stratum short of repositories gives what it has and a shortfall.
func TestDrawSample(t *testing.T) {
	frame := syntheticFrame(map[string]int{stratumNPM: 30, stratumPyPI: 20, stratumRemoteOnly: 15, stratumMCPB: 7, stratumOCI: 4, stratumOther: 9})
	alloc, _ := ParseStrata(PaperStrata)
	// The draw order, by the rule, for npm.
	var npm []string
	for _, e := range frame {
		if e.Stratum == stratumNPM {
			npm = append(npm, e.Repository)
		}
	}
	slices.SortFunc(npm, func(a, b string) int { return strings.Compare(orderKey(7, a), orderKey(7, b)) })
	excl := []Exclusion{
		{Repository: npm[0], Reason: "404"},   // initial draw: replaced by npm[12]
		{Repository: npm[12], Reason: "gone"}, // would-be replacement: skipped, so npm[5]'s replacement is npm[13]
		{Repository: npm[5]},
		{Repository: npm[20]}, // not reached
		{Repository: "github.com/nobody/else"},
	}
	s := DrawSample(frame, 7, alloc, excl)
	var got []string
	for _, p := range s.Picks {
		if p.Stratum == stratumNPM {
			got = append(got, p.Repository)
		}
	}
	want := append([]string{npm[13]}, npm[1:5]...)
	want = append(want, npm[14])
	want = append(want, npm[6:12]...)
	if !slices.Equal(got, want) {
		t.Errorf("npm picks:\n%v\nwant\n%v", got, want)
	}
	if len(s.Replacements) != 2 ||
		s.Replacements[0] != (Replacement{stratumNPM, 1, npm[0], 1, npm[13], 14}) ||
		s.Replacements[1] != (Replacement{stratumNPM, 6, npm[5], 6, npm[14], 15}) {
		t.Errorf("replacements %+v", s.Replacements)
	}
	reached := map[string]bool{}
	for _, x := range s.Exclusions {
		reached[x.Repository] = x.Reached
		if x.Repository == "github.com/nobody/else" && (x.Stratum != "" || x.Rank != 0) {
			t.Errorf("an exclusion outside the frame is placed: %+v", x)
		}
	}
	if !reached[npm[0]] || !reached[npm[12]] || !reached[npm[5]] || reached[npm[20]] {
		t.Errorf("reached: %v", reached)
	}
	if len(s.Shortfalls) != 1 || s.Shortfalls[0] != (Shortfall{stratumOCI, 6, 4, 4, 0}) {
		t.Errorf("shortfalls %+v, want oci 6 asked, 4 drawn", s.Shortfalls)
	}
	if len(s.Picks) != 12+12+12+6+4+6 || len(s.Order) != len(frame) {
		t.Errorf("%d picks, %d in the order", len(s.Picks), len(s.Order))
	}
	// Slots are 1..k in order within each stratum.
	slot := map[string]int{}
	for _, p := range s.Picks {
		slot[p.Stratum]++
		if p.Slot != slot[p.Stratum] {
			t.Errorf("pick %+v out of slot order", p)
		}
	}
}

// TestWriteReproducible writes the sample of the fixture pages twice, and
// once more from the frame it wrote: the same bytes each time (the
// snapshot-only files aside), and every file's sha256 in SHA256SUMS.
func TestWriteReproducible(t *testing.T) {
	alloc, _ := ParseStrata("npm=1,pypi=1,remote=1,mcpb=1,oci=1,other=1")
	// free-credits is drawn first (key 28bd… < 686c…); tickets-mcp replaces it.
	excl := []Exclusion{{Repository: "github.com/spammer/free-credits", Reason: "archived"}}
	write := func(dir string) {
		f := BuildFrame(readPages(t), FrameOptions{IncludeDeleted: true})
		r := &Result{Frame: f, Sample: DrawSample(f.Entries, DefaultSeed, alloc, excl), Inputs: []Input{{File: "page-1.json"}}}
		if _, err := r.Write(dir, nil); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	write(a)
	write(b)
	for _, f := range []string{FrameFile, DrawsFile, ExclusionsFile, ReplacementsFile, SampleFile, RejectedFile, ManifestFile, SumsFile} {
		t.Run(f, func(t *testing.T) {
			da, err := os.ReadFile(filepath.Join(a, f))
			if err != nil {
				t.Fatal(err)
			}
			db, _ := os.ReadFile(filepath.Join(b, f))
			if !bytes.Equal(da, db) {
				t.Errorf("%s differs between two runs", f)
			}
		})
	}
	if _, err := (&Result{}).Write(a, nil); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("writing into a full directory: %v", err)
	}
	// The replacement of the excluded remote-only repository is recorded.
	repl, _ := os.ReadFile(filepath.Join(a, ReplacementsFile))
	if string(repl) != `{"stratum":"remote","slot":1,"excluded":"github.com/spammer/free-credits","excluded_rank":1,"replacement":"github.com/example-corp/tickets-mcp","replacement_rank":2}`+"\n" {
		t.Errorf("replacements.jsonl: %s", repl)
	}
	// From the frame alone, the same draw.
	data, _ := os.ReadFile(filepath.Join(a, FrameFile))
	entries, err := ReadFrame(FrameFile, data)
	if err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(t.TempDir(), "c")
	r := &Result{Frame: &Frame{Entries: entries}, FromFrame: true, Sample: DrawSample(entries, DefaultSeed, alloc, excl)}
	if _, err := r.Write(c, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FrameFile, DrawsFile, ExclusionsFile, ReplacementsFile, SampleFile} {
		t.Run(f, func(t *testing.T) {
			da, _ := os.ReadFile(filepath.Join(a, f))
			dc, _ := os.ReadFile(filepath.Join(c, f))
			if !bytes.Equal(da, dc) {
				t.Errorf("%s from the frame differs from the snapshot's", f)
			}
		})
	}
	sums, _ := os.ReadFile(filepath.Join(a, SumsFile))
	if n := strings.Count(string(sums), "\n"); n != 7 {
		t.Errorf("SHA256SUMS has %d lines, want 7:\n%s", n, sums)
	}
}

// TestReadFrameErrors: a bad frame line is an error naming file and line.
func TestReadFrameErrors(t *testing.T) {
	ok := `{"repository":"github.com/a/b","stratum":"npm","servers":[],"registry_types":[],"remotes":false}`
	for data, want := range map[string]string{
		ok + "\n" + ok: "f.jsonl:2: repository github.com/a/b is already on line 1",
		`{"repository":"github.com/A/b","stratum":"npm"}`:       "not in canonical form",
		`{"repository":"github.com/a/b","stratum":"rust"}`:      `unknown stratum "rust"`,
		`{"repository":"github.com/a/b","stratum":"npm","x":1}`: `f.jsonl:1: json: unknown field "x"`,
		"": "no repositories",
	} {
		t.Run(want, func(t *testing.T) {
			if _, err := ReadFrame("f.jsonl", []byte(data)); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadFrame(%q): %v, want %q", data, err, want)
			}
		})
	}
}

func TestReadExclusions(t *testing.T) {
	got, err := ReadExclusions("x.txt", []byte("# inaccessible\nhttps://github.com/A/B.git 404 not found\n\n github.com/c/d\tarchived\n"))
	if err != nil || len(got) != 2 || got[0] != (Exclusion{"github.com/a/b", "404 not found"}) || got[1] != (Exclusion{"github.com/c/d", "archived"}) {
		t.Errorf("ReadExclusions: %+v, %v", got, err)
	}
	for data, want := range map[string]string{
		"github.com/a/b\nhttps://gitlab.com/a/b": `x.txt:2: "https://gitlab.com/a/b": not a GitHub repository`,
		"github.com/a/b\ngithub.com/A/B":         "x.txt:2: github.com/a/b is already excluded on line 1",
	} {
		t.Run(want, func(t *testing.T) {
			if _, err := ReadExclusions("x.txt", []byte(data)); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadExclusions(%q): %v, want %q", data, err, want)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.10.0", "1.9.0", 1},
		{"1.0.0", "1.0.0-rc.1", 1},
		{"1.0.0-rc.2", "1.0.0-rc.10", -1},
		{"1.0.0-alpha", "1.0.0-1", 1},
		{"v2", "1.9.9", 1},
		{"1.0.0+build.5", "1.0.0", 0},
		{"2025.11.3", "2025.9.30", 1},
		{"1.0.0", "latest", 1},
		{"abc", "abd", -1},
	} {
		t.Run(tc.a+" vs "+tc.b, func(t *testing.T) {
			if got := compareVersions(tc.a, tc.b); got != tc.want {
				t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := compareVersions(tc.b, tc.a); got != -tc.want {
				t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

// FuzzDecode: no input makes Decode panic; every record it returns has a
// name and a location inside the file, and every error is located.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"page-1.json", "page-2.json"} {
		data, _ := os.ReadFile(filepath.Join("testdata", name))
		f.Add(data)
	}
	f.Add([]byte(`[{"name":"a/b","repository":{"url":"https://github.com/a/b"}}]`))
	f.Add([]byte("{\"server\":{\"name\":\"a/b\"}}\n{\"server\":{\"name\":\"c/d\"}}\n"))
	f.Add([]byte(`{"servers":[{"server":{"name":"x/y"}},`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, errs := Decode("fuzz", data)
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, r := range recs {
			if strings.TrimSpace(r.Server.Name) == "" || r.At.Line < 1 || r.At.Line > lines || r.At.Record < 1 {
				t.Errorf("record %+v", r)
			}
		}
		for _, err := range errs {
			var re *RecordError
			if !errors.As(err, &re) || re.At.Line < 1 || re.At.Line > lines || re.At.File != "fuzz" {
				t.Errorf("error %v is not located in the file", err)
			}
		}
		BuildFrame(recs, FrameOptions{})
	})
}
