package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runWithin runs the command in-process, at most limit: a command still
// running then fails the test, and free, when not nil, is called until
// the command ends (each call lets one blocked open go), for at most
// another limit.
func runWithin(t *testing.T, limit time.Duration, free func(), args ...string) (string, string, error) {
	t.Helper()
	type result struct {
		out, log string
		err      error
	}
	done := make(chan result, 1)
	go func() {
		out, log, err := runCmd(t, args...)
		done <- result{out, log, err}
	}()
	select {
	case r := <-done:
		return r.out, r.log, r.err
	case <-time.After(limit):
		if free != nil {
			for end := time.Now().Add(limit); time.Now().Before(end); {
				free()
				select {
				case <-done:
					t.Fatalf("%q: still running after %v", args, limit)
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		t.Fatalf("%q: still running after %v, and after it was let go", args, limit)
	}
	return "", "", nil
}

// releaseFIFO lets a reader blocked opening the named pipe fifo go: it
// opens the pipe for writing and closes it (the reader sees its end).
func releaseFIFO(fifo string) func() {
	return func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	}
}

// TestSpecialBundleFilesRefused replaces a bundle's calls.jsonl or
// messages.jsonl by a named pipe, or by a symbolic link to a device, and
// runs every command that reads it: each fails at once, naming the file
// and what it is. Before, each waited forever opening the pipe (and a
// signal did not stop it: it was blocked in openat; now no open of a
// bundle's file blocks, so there is nothing left for a signal to
// interrupt), and read the device as an empty or endless file.
func TestSpecialBundleFilesRefused(t *testing.T) {
	root := t.TempDir()
	shards := [2]string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	for i, d := range shards {
		if _, log, err := runCmd(t, "run", "-quiet", "-shard", fmt.Sprintf("%d/2", i+1), "-out", d); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
	}
	n := 0
	for _, file := range []string{"calls.jsonl", "messages.jsonl"} {
		for _, kind := range []string{"a named pipe", "a symbolic link to a device"} {
			// special copies bundle src with file replaced.
			special := func(src string) (dir, path string, free func()) {
				n++
				dir = filepath.Join(root, fmt.Sprintf("bundle%d", n))
				copyTree(t, src, dir)
				path = filepath.Join(dir, file)
				os.Remove(path)
				if kind == "a named pipe" {
					if err := syscall.Mkfifo(path, 0o644); err != nil {
						t.Fatal(err)
					}
					return dir, path, releaseFIFO(path)
				}
				if err := os.Symlink("/dev/null", path); err != nil {
					t.Fatal(err)
				}
				return dir, path, nil
			}
			for _, cmd := range []string{"analyze", "export", "merge", "run -resume", "upgrade"} {
				t.Run(file+"/"+kind+"/"+cmd, func(t *testing.T) {
					src := shards[0]
					if cmd == "upgrade" {
						src = oldBundle("format2", "baselines")
					}
					dir, path, free := special(src)
					out := filepath.Join(root, fmt.Sprintf("out%d", n))
					args := map[string][]string{
						"analyze":     {"analyze", dir},
						"export":      {"export", "-out", out, dir},
						"merge":       {"merge", "-out", out, dir, shards[1]},
						"run -resume": {"run", "-quiet", "-resume", dir},
						"upgrade":     {"upgrade", "-out", out, dir},
					}[cmd]
					_, _, err := runWithin(t, 20*time.Second, free, args...)
					want := path + ": not a regular file (" + kind + "); give a file"
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("%q: %v, want an error with %q", args, err, want)
					}
					if _, err := os.Lstat(out); err == nil {
						t.Errorf("%q wrote %s", args, out)
					}
				})
			}
		}
	}
}

// TestOutSymlinkRefused: export, merge and upgrade refuse a symbolic
// link at -out (to an empty directory, or dangling), naming it, and
// leave it as it was. Before, each replaced the link with its output.
func TestOutSymlinkRefused(t *testing.T) {
	root := t.TempDir()
	shards := [2]string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	for i, d := range shards {
		if _, log, err := runCmd(t, "run", "-quiet", "-shard", fmt.Sprintf("%d/2", i+1), "-out", d); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
	}
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	for _, to := range []string{empty, filepath.Join(root, "nowhere")} {
		for _, cmd := range []string{"export", "merge", "upgrade"} {
			t.Run(cmd+" -out a link to "+filepath.Base(to), func(t *testing.T) {
				link := filepath.Join(root, cmd+"-to-"+filepath.Base(to))
				if err := os.Symlink(to, link); err != nil {
					t.Fatal(err)
				}
				args := map[string][]string{
					"export":  {"export", "-out", link, shards[0]},
					"merge":   {"merge", "-out", link, shards[0], shards[1]},
					"upgrade": {"upgrade", "-out", link, oldBundle("format2", "baselines")},
				}[cmd]
				_, _, err := runCmd(t, args...)
				want := fmt.Sprintf("output directory %s is a symbolic link (to %q); give a path that is not a link", link, to)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%q: %v, want an error with %q", args, err, want)
				}
				if got, err := os.Readlink(link); err != nil || got != to {
					t.Errorf("%q: the link is now %q (%v)", args, got, err)
				}
			})
		}
	}
	if es := mustReadDir(t, empty); len(es) != 0 {
		t.Errorf("written into the link's target: %v", es)
	}
	for _, e := range mustReadDir(t, root) {
		if strings.Contains(e, ".partial-") {
			t.Errorf("left behind: %s", e)
		}
	}
}

// TestPartialsSwept: the temporary directories that killed exports and
// merges left (.NAME.partial-*, as a SIGKILL leaves them: no process
// holds their lock) are removed by the next export or merge into the
// same output, which names each in its output; other files stay.
// Before, nothing removed them (12 after 12 killed exports, 23-37 MB
// each, inside the bundle).
func TestPartialsSwept(t *testing.T) {
	root := t.TempDir()
	shards := [2]string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	for i, d := range shards {
		if _, log, err := runCmd(t, "run", "-quiet", "-shard", fmt.Sprintf("%d/2", i+1), "-out", d); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
	}
	merged := filepath.Join(root, "merged")
	for _, tc := range []struct {
		name  string
		final string
		args  []string
	}{
		{"export", filepath.Join(shards[0], "inspect"), []string{"export", shards[0]}},
		{"merge", merged, []string{"merge", "-out", merged, shards[0], shards[1]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, base := filepath.Split(tc.final)
			var left []string
			for i := range 3 {
				p := filepath.Join(parent, fmt.Sprintf(".%s.partial-%d", base, 1000+i))
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(p, "half"), make([]byte, 1<<10), 0o644)
				left = append(left, p)
			}
			other := filepath.Join(parent, ".notes.partial-1")
			os.Mkdir(other, 0o755)
			_, log, err := runCmd(t, tc.args...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.name, err, log)
			}
			for _, p := range left {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s: %s stays", tc.name, p)
				}
				if want := "removed " + p + ": the temporary output of a command killed before it finished\n"; !strings.Contains(log, want) {
					t.Errorf("%s: the output does not say %q:\n%s", tc.name, want, log)
				}
			}
			if _, err := os.Stat(other); err != nil {
				t.Errorf("%s removed another output's directory: %v", tc.name, err)
			}
		})
	}
}

// TestCaptureErrorNamesFinal: capture into a relative -out whose servers
// all fail says which directory holds its log by the name it has once
// written, not the temporary one. Before, the error named
// .o.partial-*/corpus, gone by then.
func TestCaptureErrorNamesFinal(t *testing.T) {
	t.Chdir(t.TempDir())
	_, _, err := runCmd(t, "capture", "-out", "o", "-interval", "1ms", "-stdio", "broken=sh -c 'exit 3'")
	want := "no failures captured: nothing written to o/corpus (see o/"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), ".partial-") {
		t.Errorf("err %v, want %q", err, want)
	}
}
