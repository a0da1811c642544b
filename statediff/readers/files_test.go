package readers

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDir reads a tree with a file, a directory, a link, a FIFO, a large
// file and invalid UTF-8: the records are those mcpenv's state holds, the
// link is not followed, the FIFO not opened, the large file capped.
func TestDir(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(secret, []byte("TOP SECRET"), 0o644))
	must(os.MkdirAll(filepath.Join(root, "notes", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(root, "notes", "a.md"), []byte("hello\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "bad.txt"), []byte("a\xffb"), 0o644))
	must(os.Symlink(secret, filepath.Join(root, "link")))
	must(syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644))
	must(os.WriteFile(filepath.Join(root, "big.bin"), bytes.Repeat([]byte("x"), MaxFileBytes+10), 0o644))
	doc := map[string]any{}
	hide := func(p string) string { return strings.ReplaceAll(p, filepath.Dir(secret), "/elsewhere") }
	capped, err := (&Dir{Root: root, Name: "the sandbox", Hide: hide}).Read(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]map[string]any{}
	for _, f := range doc["files"].([]any) {
		rec := f.(map[string]any)
		files[rec["path"].(string)] = rec
	}
	check := func(path string, want map[string]any) {
		t.Helper()
		got := files[path]
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", path, got, want)
			return
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s is %v, want %v", path, k, got[k], v)
			}
		}
	}
	check("/notes/a.md", map[string]any{"path": "/notes/a.md", "content": "hello\n", "size": float64(6)})
	check("/bad.txt", map[string]any{"path": "/bad.txt", "content": "a\uFFFDb", "size": float64(3)})
	check("/link", map[string]any{"path": "/link", "content": "", "size": float64(0), "link": "/elsewhere/secret.txt"})
	check("/pipe", map[string]any{"path": "/pipe", "content": "", "size": float64(0), "kind": "fifo"})
	if big := files["/big.bin"]; big["truncated"] != true || big["size"] != float64(MaxFileBytes+10) || len(big["content"].(string)) != MaxFileBytes {
		t.Errorf("big file: truncated %v size %v", big["truncated"], big["size"])
	}
	if len(files) != 5 {
		t.Errorf("%d files, want 5: %v", len(files), doc["files"])
	}
	dirs := doc["directories"].([]any)
	if len(dirs) != 2 || dirs[0].(map[string]any)["path"] != "/notes" || dirs[1].(map[string]any)["path"] != "/notes/deep" {
		t.Errorf("directories %v", dirs)
	}
	if len(capped) != 1 || !strings.Contains(capped[0], "/big.bin") {
		t.Errorf("capped %q", capped)
	}

	// A shared budget: what one reader read, the next cannot.
	b := NewBudget(4)
	doc = map[string]any{}
	if _, err := (&Dir{Root: filepath.Join(root, "notes"), Budget: b}).Read(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	if got := doc["files"].([]any)[0].(map[string]any); got["content"] != "hell" || got["truncated"] != true || b.Left() != 0 {
		t.Errorf("a budget of 4 bytes: %v, %d left", got, b.Left())
	}

	// Too many entries: the rest are named in capped.
	many := t.TempDir()
	for i := range MaxStateEntries + 1 {
		must(os.Mkdir(filepath.Join(many, "d"+strconv.Itoa(i)), 0o755))
	}
	doc = map[string]any{}
	capped, err = (&Dir{Root: many}).Read(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc["directories"].([]any)) != MaxStateEntries || len(capped) != 1 || !strings.Contains(capped[0], "the directory") {
		t.Errorf("%d directories, capped %q", len(doc["directories"].([]any)), capped)
	}

	// A missing directory is an error naming it (hidden).
	if _, err := (&Dir{Root: filepath.Join(filepath.Dir(secret), "gone"), Hide: hide}).Read(context.Background(), map[string]any{}); err == nil || !strings.Contains(err.Error(), "/elsewhere/gone") {
		t.Errorf("a missing directory: %v", err)
	}
}

// TestMemoryFile reads server-memory's JSONL: entities and relations by
// type, a missing file as an empty graph, a link or a bad line as an error
// naming the memory file, a large file up to its last whole line.
func TestMemoryFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "memory.jsonl")
	doc := map[string]any{}
	if _, err := (&MemoryFile{Path: p}).Read(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	mem := doc["memory"].(map[string]any)
	if len(mem["entities"].([]any)) != 0 || len(mem["relations"].([]any)) != 0 {
		t.Errorf("a missing file: %v", mem)
	}
	lines := `{"type":"entity","name":"Ada","entityType":"person","observations":["x"]}
{"type":"relation","from":"Ada","to":"Tea","relationType":"likes"}

{"type":"other"}
`
	if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	doc = map[string]any{}
	if _, err := (&MemoryFile{Path: p}).Read(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	mem = doc["memory"].(map[string]any)
	if e := mem["entities"].([]any); len(e) != 1 || e[0].(map[string]any)["name"] != "Ada" {
		t.Errorf("entities %v", e)
	}
	if r := mem["relations"].([]any); len(r) != 1 || r[0].(map[string]any)["relationType"] != "likes" {
		t.Errorf("relations %v", r)
	}
	// A budget cutting the second line keeps the first whole.
	b := NewBudget(int64(strings.Index(lines, "\n") + 10))
	doc = map[string]any{}
	capped, err := (&MemoryFile{Path: p, Budget: b}).Read(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	mem = doc["memory"].(map[string]any)
	if len(mem["entities"].([]any)) != 1 || len(mem["relations"].([]any)) != 0 || len(capped) != 1 || !strings.Contains(capped[0], "memory file") {
		t.Errorf("capped read: %v, capped %q", mem, capped)
	}
	if err := os.WriteFile(p, []byte("{\"type\":\"entity\"}\n[1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&MemoryFile{Path: p}).Read(context.Background(), map[string]any{}); err == nil || !strings.Contains(err.Error(), "the memory file, line 2") {
		t.Errorf("a bad line: %v", err)
	}
	os.Remove(p)
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), p); err != nil {
		t.Fatal(err)
	}
	if _, err := (&MemoryFile{Path: p}).Read(context.Background(), map[string]any{}); err == nil || !strings.Contains(err.Error(), "memory file memory.jsonl is not a regular file") {
		t.Errorf("a link: %v", err)
	}
}
