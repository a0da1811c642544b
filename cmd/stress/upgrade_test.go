package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oldBundles are the checked-in bundles of earlier formats, with the
// output of stress analyze -json of the version that read them
// (runner/testdata/FORMAT/NAME.analyze.json, never regenerated).
var oldBundles = []struct{ format, name string }{
	{"format1", "hash-small"},
	{"format2", "baselines"},
	{"format2", "baselines-shard1"},
	{"format2", "lab"},
}

func oldBundle(format, name string) string {
	return filepath.Join("..", "..", "runner", "testdata", format, name)
}

// withoutMember returns the indented JSON text js (as stress analyze
// -json prints it, two spaces a level) without its object members named
// name, whatever their values: an added outcome column's count, rate,
// intervals and warnings.
func withoutMember(js, name string) string {
	lines := strings.Split(js, "\n")
	var out []string
	key := `"` + name + `": `
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		body := strings.TrimLeft(l, " ")
		if !strings.HasPrefix(body, key) {
			out = append(out, l)
			continue
		}
		indent := l[:len(l)-len(body)]
		last := l
		if v := strings.TrimSuffix(body[len(key):], ","); v == "[" || v == "{" {
			// A value over several lines ends at the line that closes it
			// at the member's indentation.
			for i++; i < len(lines) && !(strings.HasPrefix(lines[i], indent+"]") || strings.HasPrefix(lines[i], indent+"}")); i++ {
			}
			if i < len(lines) {
				last = lines[i]
			}
		}
		if !strings.HasSuffix(last, ",") && len(out) > 0 {
			// The member was its object's last: its predecessor is now.
			out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], ",")
		}
	}
	return strings.Join(out, "\n")
}

// treeHashes returns the sha256 of every file under dir, by path.
func treeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	h := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		h[path] = fmt.Sprintf("%x", sha256.Sum256(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestUpgrade: stress upgrade converts each checked-in bundle of format 1
// and 2 into a bundle whose stress analyze -json output is byte for byte
// what the version that read the old format printed for it; the old
// bundle is left as it was, file for file, also by the commands that
// refuse it (run -resume, merge, analyze, compare, report), whose error
// names the bundle, its format and stress upgrade.
func TestUpgrade(t *testing.T) {
	root := t.TempDir()
	for _, b := range oldBundles {
		t.Run(b.format+" "+b.name, func(t *testing.T) {
			old := oldBundle(b.format, b.name)
			before := treeHashes(t, old)
			out := filepath.Join(root, b.name)
			_, errOut, err := runCmd(t, "upgrade", old, "-out", out)
			if err != nil || !strings.HasPrefix(errOut, "upgraded "+old+" (format "+b.format[6:]+") into "+out+" (format 3): ") {
				t.Fatalf("upgrade %s: %v\n%s", b.name, err, errOut)
			}
			got, _, err := runCmd(t, "analyze", "-json", out)
			if err != nil {
				t.Fatalf("analyze the upgraded %s: %v", b.name, err)
			}
			want := string(mustRead(t, old+".analyze.json"))
			// What was added after that version (the proven column, each
			// cell's pass^k) is not in its output; everything else must be
			// byte for byte the same.
			if got = withoutMember(withoutMember(got, "proven"), "pass_k"); got != want {
				t.Errorf("analyze -json of the upgraded %s differs from the old version's:\n%s", b.name, diff(want, got))
			}

			refusal := fmt.Sprintf("%s is a bundle of format %s; this version reads format 3: run `stress upgrade %s -out NEW_DIR`", old, b.format[6:], old)
			for _, args := range [][]string{
				{"run", "-resume", old},
				{"merge", "-out", filepath.Join(root, "merged"), old},
				{"analyze", old},
				{"analyze", "-json", "-partial", old},
				{"compare", old, out},
				{"report", "-out", filepath.Join(root, "report"), old},
				{"export", "-out", filepath.Join(root, "logs"), old},
			} {
				t.Run(argsName(args), func(t *testing.T) {
					_, _, err := runCmd(t, args...)
					if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), refusal) {
						t.Errorf("%q: %v, want a failure with %q", args, err, refusal)
					}
				})
			}
			for _, name := range []string{"merged", "report"} {
				if _, err := os.Stat(filepath.Join(root, name)); !os.IsNotExist(err) {
					t.Errorf("a refused %s wrote %s", name, filepath.Join(root, name))
				}
			}
			after := treeHashes(t, old)
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("%s changed:\nbefore %v\nafter  %v", old, before, after)
			}
		})
	}
}

// TestUpgradeRefused: upgrade refuses a bundle of format 3 (there is
// nothing to do), a missing -out (a usage error) and an -out that is not
// empty, writing nothing.
func TestUpgradeRefused(t *testing.T) {
	root := t.TempDir()
	old := oldBundle("format2", "lab")
	up := filepath.Join(root, "up")
	if _, _, err := runCmd(t, "upgrade", "-out", up, old); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"refuses a bundle of the current format", []string{"upgrade", up, "-out", filepath.Join(root, "again")}, false, up + " is a bundle of format 3 already, the one this version reads: nothing to upgrade"},
		{"-out is required", []string{"upgrade", old}, true, "upgrade: flag -out is required"},
		{"takes one bundle directory", []string{"upgrade", "-out", filepath.Join(root, "two"), old, up}, true, "upgrade takes one bundle directory, got 2 arguments"},
		{"refuses a non-empty -out", []string{"upgrade", old, "-out", up}, false, "output directory " + up + " is not empty (it holds "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(t, tc.args...)
			if err == nil || errors.Is(err, errUsage) != tc.usage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: %v, want a failure (usage %v) with %q", tc.args, err, tc.usage, tc.want)
			}
		})
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("%s holds %d entries, want only the first upgrade's", root, len(entries))
	}
}
