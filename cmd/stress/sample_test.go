package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstress/stress/audit/registry"
)

// snapshotPages are the registry package's fixture pages: real-format
// records of the official registry's API.
var snapshotPages = []string{"../../audit/registry/testdata/page-1.json", "../../audit/registry/testdata/page-2.json"}

// sampleFiles are the files every sample directory holds.
var sampleFiles = []string{registry.FrameFile, registry.DrawsFile, registry.ExclusionsFile, registry.ReplacementsFile,
	registry.SampleFile, registry.RejectedFile, registry.ManifestFile, registry.SumsFile}

// readDir returns the files under dir by slash-separated relative path.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(must(os.ReadFile(p)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSample draws from the fixture pages with one exclusion (the deleted
// server kept with -include-deleted, so that its exclusion is replaced):
// the summary is pinned (testdata/sample.golden), the directory holds
// every file, a second run writes the same bytes, and a draw from the
// frame it wrote (-frame) gives the same draw order and sample.
func TestSample(t *testing.T) {
	excl := filepath.Join(t.TempDir(), "inaccessible.txt")
	os.WriteFile(excl, []byte("# found inaccessible on 2026-08-19\nhttps://github.com/spammer/free-credits  archived\ngithub.com/not/in-frame\n"), 0o644)
	args := func(dir string) []string {
		return append([]string{"sample", "-out", dir, "-strata", "npm=1,pypi=1,remote=1,mcpb=1,other=1", "-exclude", excl, "-include-deleted"}, snapshotPages...)
	}
	a := filepath.Join(t.TempDir(), "a")
	out, errOut, err := runCmd(t, args(a)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	golden(t, "sample.golden", strings.ReplaceAll(out, a, "DIR"))
	if errOut != "stress sample: warning: excluded repository github.com/not/in-frame is not in the frame\n" {
		t.Errorf("stderr %q", errOut)
	}
	got := readDir(t, a)
	for _, f := range sampleFiles {
		if _, ok := got[f]; !ok {
			t.Errorf("%s lacks %s", a, f)
		}
	}
	wantSample := `{"stratum":"npm","slot":1,"rank":1,"repository":"github.com/acme/weather-mcp","servers":["io.github.acme/weather","io.github.acme/weather-alerts"]}
{"stratum":"pypi","slot":1,"rank":1,"repository":"github.com/pyfolk/sqlite-explorer","servers":["io.github.pyfolk/sqlite-explorer"]}
{"stratum":"remote","slot":1,"rank":2,"repository":"github.com/example-corp/tickets-mcp","replaces":"github.com/spammer/free-credits","servers":["com.example/tickets"]}
{"stratum":"mcpb","slot":1,"rank":1,"repository":"github.com/bundler/desktop-notes","servers":["io.github.bundler/desktop-notes"]}
{"stratum":"other","slot":1,"rank":1,"repository":"github.com/dotnetter/calendar-mcp","servers":["io.github.dotnetter/calendar"]}
`
	if got[registry.SampleFile] != wantSample {
		t.Errorf("sample.jsonl:\n%s\nwant\n%s", got[registry.SampleFile], wantSample)
	}
	b := filepath.Join(t.TempDir(), "b")
	if _, _, err := runCmd(t, args(b)...); err != nil {
		t.Fatal(err)
	}
	if again := readDir(t, b); fmt.Sprint(again) != fmt.Sprint(got) {
		t.Errorf("a second run wrote other bytes")
	}
	// SHA256SUMS lists every other file's sha256.
	for _, line := range strings.Split(strings.TrimSpace(got[registry.SumsFile]), "\n") {
		sum, name, _ := strings.Cut(line, "  ")
		if sha := inputOf("", []byte(got[name]), 0).SHA256; sha != sum {
			t.Errorf("SHA256SUMS: %s %s, the file's sha256 is %s", sum, name, sha)
		}
	}
	c := filepath.Join(t.TempDir(), "c")
	out, _, err = runCmd(t, "sample", "-out", c, "-strata", "npm=1,pypi=1,remote=1,mcpb=1,other=1", "-exclude", excl, "-frame", filepath.Join(a, registry.FrameFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, `frame "frame.jsonl": 6 GitHub repositories`) {
		t.Errorf("-frame summary:\n%s", out)
	}
	fromFrame := readDir(t, c)
	for _, f := range []string{registry.FrameFile, registry.DrawsFile, registry.ExclusionsFile, registry.ReplacementsFile, registry.SampleFile} {
		if fromFrame[f] != got[f] {
			t.Errorf("-frame: %s differs from the snapshot's", f)
		}
	}
}

// TestSampleDeleted: a server the registry marks deleted (the fixture's
// io.github.spammer/free-credits) is left out of the frame by default,
// listed in rejected.jsonl and counted among the records left out, in
// the summary and the manifest; -include-deleted keeps it, and says so.
func TestSampleDeleted(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	out, errOut, err := runCmd(t, append([]string{"sample", "-out", a, "-strata", "remote=1"}, snapshotPages...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{
		"snapshot: 10 records, 9 servers (one latest record each), 5 unique GitHub repositories\n",
		"latest records left out of the frame: 3 (no repository 1, not a GitHub repository 1, status deleted 1)\n",
		"remote          1      1      1         0         0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	got := readDir(t, a)
	if strings.Contains(got[registry.FrameFile], "spammer") || strings.Contains(got[registry.DrawsFile], "spammer") {
		t.Errorf("the deleted server's repository is in the frame:\n%s", got[registry.FrameFile])
	}
	if !strings.Contains(got[registry.RejectedFile], `"name":"io.github.spammer/free-credits","version":"1.0.0","reason":"status deleted","url":"https://github.com/spammer/free-credits"`) {
		t.Errorf("rejected.jsonl:\n%s", got[registry.RejectedFile])
	}
	var m registry.Manifest
	if err := json.Unmarshal([]byte(got[registry.ManifestFile]), &m); err != nil {
		t.Fatal(err)
	}
	if m.Rejected[registry.ReasonDeleted] != 1 || m.IncludeDeleted || m.Repositories != 5 || m.Statuses["deleted"] != 1 {
		t.Errorf("manifest: rejected %v, include_deleted %v, %d repositories, statuses %v", m.Rejected, m.IncludeDeleted, m.Repositories, m.Statuses)
	}
	b := filepath.Join(t.TempDir(), "b")
	out, _, err = runCmd(t, append([]string{"sample", "-out", b, "-strata", "remote=1", "-include-deleted"}, snapshotPages...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"6 unique GitHub repositories\n",
		"latest records left out of the frame: 2 (no repository 1, not a GitHub repository 1)\n",
		"servers the registry marks deleted, kept (-include-deleted): 1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-include-deleted: summary lacks %q:\n%s", want, out)
		}
	}
	got = readDir(t, b)
	m = registry.Manifest{}
	json.Unmarshal([]byte(got[registry.ManifestFile]), &m)
	if !strings.Contains(got[registry.FrameFile], `"repository":"github.com/spammer/free-credits"`) || !m.IncludeDeleted || m.KeptDeleted != 1 || m.Rejected[registry.ReasonDeleted] != 0 {
		t.Errorf("-include-deleted: frame\n%s\nmanifest %+v", got[registry.FrameFile], m)
	}
	if _, _, err := runCmd(t, "sample", "-out", filepath.Join(t.TempDir(), "c"), "-include-deleted", "-frame", filepath.Join(a, registry.FrameFile)); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "flag -include-deleted goes with a snapshot or -fetch") {
		t.Errorf("-include-deleted -frame: %v", err)
	}
}

// TestSampleFetch pages a local registry (the fixture pages behind a
// cursor), keeps the pages under snapshot/, and a draw from those pages
// gives the same frame and sample.
func TestSampleFetch(t *testing.T) {
	pages := map[string][]byte{"": must(os.ReadFile(snapshotPages[0])), "com.example/tickets:2025.11.3": must(os.ReadFile(snapshotPages[1]))}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Query().Get("cursor")]
		if r.URL.Path != "/v0/servers" || !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(p)
	}))
	defer srv.Close()
	a := filepath.Join(t.TempDir(), "a")
	out, errOut, err := runCmd(t, "sample", "-out", a, "-fetch", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "stratum npm: asked for 12 repositories, the frame holds 1 (0 of them excluded): drew 1") {
		t.Fatalf("the paper's strata from 6 repositories: %v, want shortfalls\n%s", err, errOut)
	}
	if !strings.Contains(out, "snapshot: 10 records, 9 servers (one latest record each), 5 unique GitHub repositories") {
		t.Errorf("summary:\n%s", out)
	}
	got := readDir(t, a)
	if got["snapshot/page-00001.json"] != string(pages[""]) || got["snapshot/page-00002.json"] != string(pages["com.example/tickets:2025.11.3"]) {
		t.Errorf("the pages are not kept as served: %v", keys(got))
	}
	var m registry.Manifest
	if err := json.Unmarshal([]byte(got[registry.ManifestFile]), &m); err != nil {
		t.Fatal(err)
	}
	if m.Fetched != srv.URL || len(m.Inputs) != 2 || m.Inputs[0].File != "page-00001.json" || m.Inputs[1].Records != 6 || len(m.Shortfalls) != 6 {
		t.Errorf("manifest: %+v", m)
	}
	b := filepath.Join(t.TempDir(), "b")
	runCmd(t, "sample", "-out", b, filepath.Join(a, registry.SnapshotDir))
	again := readDir(t, b)
	for _, f := range []string{registry.FrameFile, registry.DrawsFile, registry.SampleFile, registry.RejectedFile} {
		if again[f] != got[f] {
			t.Errorf("%s from the kept pages differs from the fetched", f)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSampleBadInput: a malformed page, records without a repository or
// with a non-GitHub one, a short stratum and bad flags are reported
// clearly, naming the file, record or flag; the readable records are
// still sampled and written.
func TestSampleBadInput(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte("{\"servers\": [\n"+
		`{"server":{"name":"io.github.x/fine","version":"1.0.0","repository":{"url":"https://github.com/x/fine"},"packages":[{"registryType":"npm","identifier":"fine","version":"1.0.0"}]}},`+"\n"+
		`{"server":{"name":"io.github.x/norepo","version":"1.0.0"}},`+"\n"+
		`{"server":{"name":"io.github.x/lab","version":"1.0.0","repository":{"url":"https://gitlab.com/x/lab"}}},`+"\n"+
		`{"server":{"name":"io.github.x/cut", "version": }}`+"\n"), 0o644)
	out := filepath.Join(dir, "out")
	stdout, errOut, err := runCmd(t, "sample", "-out", out, "-strata", "npm=1,oci=2", broken)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"1 snapshot records or files could not be read",
		"stratum oci: asked for 2 repositories, the frame holds 0 (0 of them excluded): drew 0",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if want := "stress sample: " + broken + ":5: column 49: malformed JSON: invalid character '}' looking for beginning of value\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if !strings.Contains(stdout, "latest records left out of the frame: 2 (no repository 1, not a GitHub repository 1)") {
		t.Errorf("stdout:\n%s", stdout)
	}
	got := readDir(t, out)
	if got[registry.SampleFile] != `{"stratum":"npm","slot":1,"rank":1,"repository":"github.com/x/fine","servers":["io.github.x/fine"]}`+"\n" {
		t.Errorf("sample.jsonl: %s", got[registry.SampleFile])
	}
	if !strings.Contains(got[registry.RejectedFile], `"name":"io.github.x/lab","version":"1.0.0","reason":"not a GitHub repository","url":"https://gitlab.com/x/lab"`) {
		t.Errorf("rejected.jsonl: %s", got[registry.RejectedFile])
	}
	if !strings.Contains(got[registry.ManifestFile], `"problems": [`) {
		t.Errorf("manifest.json does not list the problem")
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"-out is required", []string{"sample", broken}, "sample: flag -out is required"},
		{"a source is required", []string{"sample", "-out", dir + "/x"}, "give snapshot files, -fetch URL or -frame FILE (exactly one)"},
		{"-fetch and snapshot files exclude each other", []string{"sample", "-out", dir + "/x", "-fetch", "http://h", broken}, "(exactly one)"},
		{"-strata names an unknown stratum", []string{"sample", "-out", dir + "/x", "-strata", "npm=1,cargo=2", broken}, `sample: flag -strata: unknown stratum "cargo"`},
		{"-fetch wants an http URL", []string{"sample", "-out", dir + "/x", "-fetch", "file:///etc"}, "sample: flag -fetch: \"file:///etc\": want an http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("stress %q: %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
	bad := filepath.Join(dir, "bad-exclude.txt")
	os.WriteFile(bad, []byte("github.com/a/b\nnot a url\n"), 0o644)
	if _, _, err := runCmd(t, "sample", "-out", dir+"/y", "-exclude", bad, broken); err == nil || !strings.Contains(err.Error(), bad+`:2: "not": not a GitHub repository`) {
		t.Errorf("bad exclusions: %v", err)
	}
	if _, _, err := runCmd(t, "sample", "-out", out, broken); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("a full -out: %v", err)
	}
}

// writeSnapshot writes a snapshot of n latest records in the official
// API's page format (100 entries a page, as the registry serves them):
// about 7 of 10 with a GitHub repository, some repositories shared by
// several servers, every package type and remote-only servers.
func writeSnapshot(tb testing.TB, dir string, n int) {
	tb.Helper()
	types := []string{"npm", "npm", "npm", "pypi", "pypi", "oci", "mcpb", "nuget"}
	for p := 0; p*100 < n; p++ {
		var b bytes.Buffer
		b.WriteString(`{"servers":[`)
		count := 0
		for i := p * 100; i < min(n, (p+1)*100); i++ {
			if count > 0 {
				b.WriteByte(',')
			}
			count++
			repo := ""
			switch {
			case i%10 < 7:
				repo = fmt.Sprintf(`"repository":{"url":"https://github.com/Owner%d/Server-%d","source":"github"},`, i%5000, i%11000)
			case i%10 == 7:
				repo = fmt.Sprintf(`"repository":{"url":"https://gitlab.com/o/s-%d","source":"gitlab"},`, i)
			}
			pkg := fmt.Sprintf(`"packages":[{"registryType":%q,"registryBaseUrl":"https://registry.npmjs.org","identifier":"@owner%d/server-%d","version":"1.%d.0","transport":{"type":"stdio"},"runtimeHint":"npx","environmentVariables":[{"name":"API_KEY","isSecret":true,"isRequired":true,"format":"string"}]}]`,
				types[i%len(types)], i, i, i%7)
			if i%9 == 0 {
				pkg = fmt.Sprintf(`"remotes":[{"type":"streamable-http","url":"https://mcp%d.example.com/mcp","headers":[{"name":"Authorization","isSecret":true}]}]`, i)
			}
			fmt.Fprintf(&b, `{"server":{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json","name":"io.github.owner%d/server-%d","description":"An MCP server that does task number %d for its users, well.","version":"1.%d.0",%s%s},`+
				`"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","publishedAt":"2026-0%d-1%dT10:00:00.%06dZ","updatedAt":"2026-08-01T00:00:00Z","isLatest":true}}}`,
				i, i, i, i%7, repo, pkg, 1+i%8, i%10, i)
		}
		fmt.Fprintf(&b, `],"metadata":{"nextCursor":"io.github.owner%d/server-%d:1.0.0","count":%d}}`, p, p, count)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("page-%05d.json", p+1)), b.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSample runs stress sample on a 25,000-record snapshot (250
// pages in the API's format) with the paper's strata.
func BenchmarkSample(b *testing.B) {
	snap := b.TempDir()
	writeSnapshot(b, snap, 25000)
	var size int64
	entries, _ := os.ReadDir(snap)
	for _, e := range entries {
		fi, _ := e.Info()
		size += fi.Size()
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		out := filepath.Join(b.TempDir(), fmt.Sprint(i))
		var errOut bytes.Buffer
		if err := run(context.Background(), []string{"sample", "-out", out, snap}, io.Discard, &errOut); err != nil {
			b.Fatalf("%v\n%s", err, errOut.String())
		}
	}
}

// TestSampleFetchRedirect: -fetch refuses a redirect to another host,
// naming both URLs and the flag that allows it, and writes nothing;
// -allow-redirect-host HOST:PORT follows it. The flag goes with -fetch
// only, and takes a host, not a URL.
func TestSampleFetchRedirect(t *testing.T) {
	pages := map[string][]byte{"": must(os.ReadFile(snapshotPages[0])), "com.example/tickets:2025.11.3": must(os.ReadFile(snapshotPages[1]))}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Query().Get("cursor")]
		if r.URL.Path != "/v0/servers" || !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(p)
	}))
	defer target.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer origin.Close()
	host := strings.TrimPrefix(target.URL, "http://")
	a := filepath.Join(t.TempDir(), "a")
	_, _, err := runCmd(t, "sample", "-out", a, "-strata", "npm=1", "-fetch", origin.URL)
	if err == nil || !strings.Contains(err.Error(), "sample: flag -fetch: registry page 1 ("+origin.URL+"/v0/servers?limit=100): redirect from "+origin.URL+"/v0/servers?limit=100 to another host, "+target.URL+"/v0/servers?limit=100") ||
		!strings.HasSuffix(err.Error(), "(give -allow-redirect-host "+host+" to follow it)") {
		t.Errorf("a redirect to another host: %v", err)
	}
	if _, serr := os.Stat(a); serr == nil {
		t.Errorf("a refused fetch wrote %s", a)
	}
	out, errOut, err := runCmd(t, "sample", "-out", a, "-strata", "npm=1", "-fetch", origin.URL, "-allow-redirect-host", host)
	if err != nil || !strings.Contains(out, "snapshot: 10 records") {
		t.Errorf("-allow-redirect-host %s: %v\n%s%s", host, err, out, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"-allow-redirect-host goes with -fetch", []string{"-allow-redirect-host", host, snapshotPages[0]}, "flag -allow-redirect-host goes with -fetch"},
		{"-allow-redirect-host wants a host, not a URL", []string{"-allow-redirect-host", target.URL, "-fetch", origin.URL}, `flag -allow-redirect-host: "` + target.URL + `": want a HOST or HOST:PORT`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(t, append([]string{"sample", "-out", filepath.Join(t.TempDir(), "x")}, tc.args...)...)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
}
