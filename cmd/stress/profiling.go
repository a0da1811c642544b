package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcpstress/stress/internal/input"
)

// withProfiles defines -cpuprofile, -memprofile and -trace on fs and
// returns act wrapped so that the profiles asked for start before act
// and are written when it returns, whatever it returns: the files of go
// test's flags of the same names (a runtime/pprof CPU profile, the
// allocation profile after a final garbage collection, a runtime/trace
// execution trace). Each file must not exist; all are created before act
// runs, so that a taken path is refused before the work. Without the
// flags act runs as it is.
func withProfiles(fs *flag.FlagSet, act action) action {
	cpu := fs.String("cpuprofile", "", "write a CPU profile of the command to `FILE`, a new file, when it ends, also on an error or a stop (read it with go tool pprof)")
	mem := fs.String("memprofile", "", "write a memory profile of the command to `FILE`, a new file, when it ends, after a garbage collection: every allocation sampled and what is still live (read it with go tool pprof)")
	tr := fs.String("trace", "", "write an execution trace of the command to `FILE`, a new file (read it with go tool trace)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
		if *cpu == "" && *mem == "" && *tr == "" {
			return act(ctx, args, stdout, stderr)
		}
		cmd := strings.TrimPrefix(fs.Name(), "stress ")
		p, err := startProfiles(cmd, *cpu, *mem, *tr)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, p.stop()) }()
		return act(ctx, args, stdout, stderr)
	}
}

// A profiler holds the profile files of a running command; stop writes
// and closes them, once.
type profiler struct {
	cmd   string
	files []profileFile // in the order the flags are listed
	once  sync.Once
	err   error
}

// A profileFile is one profile being written: the flag that names it and
// the file, created and open.
type profileFile struct {
	flag string // cpuprofile, memprofile or trace
	f    *os.File
}

// running is the profiler of the command running, if any: a process
// that exits at once on a repeated signal writes its profiles first
// (finishProfiles).
var running atomic.Pointer[profiler]

// startProfiles creates the files the flags name (each "" for none) and
// starts the CPU profile and the trace. On an error nothing is left
// started and the files it created are removed; the error names the
// flag.
func startProfiles(cmd, cpu, mem, tr string) (*profiler, error) {
	p := &profiler{cmd: cmd}
	named := map[string]string{} // clean path → flag
	for _, fl := range []struct{ name, path string }{{"cpuprofile", cpu}, {"memprofile", mem}, {"trace", tr}} {
		if fl.path == "" {
			continue
		}
		clean := filepath.Clean(fl.path)
		if other, ok := named[clean]; ok {
			p.discard()
			return nil, usageError("%s: flags -%s and -%s name the same file %s", cmd, other, fl.name, fl.path)
		}
		named[clean] = fl.name
		f, err := createProfile(fl.path)
		if err != nil {
			p.discard()
			return nil, fmt.Errorf("%s: flag -%s: %w", cmd, fl.name, err)
		}
		p.files = append(p.files, profileFile{fl.name, f})
	}
	for i, pf := range p.files {
		var err error
		switch pf.flag {
		case "cpuprofile":
			err = pprof.StartCPUProfile(pf.f)
		case "trace":
			err = trace.Start(pf.f)
		}
		if err != nil {
			// Stop what the files before this one started.
			for _, q := range p.files[:i] {
				switch q.flag {
				case "cpuprofile":
					pprof.StopCPUProfile()
				case "trace":
					trace.Stop()
				}
			}
			p.discard()
			return nil, fmt.Errorf("%s: flag -%s: %w", cmd, pf.flag, err)
		}
	}
	running.Store(p)
	return p, nil
}

// createProfile creates the profile file path, which must not exist (a
// symbolic link, even a dangling one, is refused too), with the checks
// of input.OpenWrite.
func createProfile(path string) (*os.File, error) {
	f, err := input.OpenWrite(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%s already exists; choose another", path)
	}
	return f, err
}

// discard closes and removes the files p created (O_EXCL: they are its
// own).
func (p *profiler) discard() {
	for _, pf := range p.files {
		pf.f.Close()
		os.Remove(pf.f.Name())
	}
	p.files = nil
}

// stop stops the CPU profile and the trace, writes the memory profile
// after a garbage collection (the order of go test), and syncs and
// closes the files; the first error names its flag. Later calls return
// the first's error, after it is done.
func (p *profiler) stop() error {
	p.once.Do(func() {
		running.CompareAndSwap(p, nil)
		for _, pf := range p.files {
			switch pf.flag {
			case "cpuprofile":
				pprof.StopCPUProfile()
			case "trace":
				trace.Stop()
			}
		}
		var errs []error
		for _, pf := range p.files {
			var err error
			if pf.flag == "memprofile" {
				runtime.GC() // the allocations up to now, as go test writes them
				err = pprof.Lookup("allocs").WriteTo(pf.f, 0)
			}
			if err == nil {
				err = pf.f.Sync()
			}
			if cerr := pf.f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: flag -%s: writing %s: %w", p.cmd, pf.flag, pf.f.Name(), err))
			}
		}
		p.err = errors.Join(errs...)
	})
	return p.err
}

// finishProfiles writes the profiles of the command running, if any, for
// a process about to exit at once; it reports an error on stderr.
func finishProfiles(stderr io.Writer) {
	if p := running.Load(); p != nil {
		if err := p.stop(); err != nil {
			fmt.Fprintln(stderr, "stress:", err)
		}
	}
}
