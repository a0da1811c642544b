package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/window"
	"github.com/mcpstress/stress/results"
)

// openSources opens the calls.jsonl files a bundle is written from.
func openSources(files []string) ([]*os.File, error) {
	var out []*os.File
	for _, f := range files {
		fh, err := input.OpenStream(f)
		if err != nil {
			closeSources(out)
			return nil, err
		}
		out = append(out, fh)
	}
	return out, nil
}

func closeSources(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// bundleWrite is what writeBundle writes a bundle from.
type bundleWrite struct {
	dir, runID string
	sp         *space
	idx        *locTable         // where each decision's lines are, in src
	src        []*os.File        // the calls.jsonl files idx points into
	defaults   *results.Defaults // fills what format-3 lines leave out
	// known, when not nil, gives what a decision's lines need not be read
	// back for (ok false: read them).
	known func(j int, o outcome) (k knownDecision, ok bool)
	// beforeRename, when not nil, is told the size of the canonical copy
	// before it replaces calls.jsonl.
	beforeRename func(size int64) error
}

// knownDecision is what a session kept of a decision it ran: its row and
// its numbers of calls and transport events.
type knownDecision struct {
	row           results.Row
	calls, events int
}

// writeBundle writes dir's calls.jsonl in canonical order from the
// decisions idx locates in src (shard-local index order is canonical
// order), then decisions.parquet from the same lines, and returns the
// counts and the size of calls.jsonl. When src is dir's own calls.jsonl and
// it is already canonical and holds nothing else, it is only read;
// otherwise the canonical copy is written beside it, which needs as much
// free space again (checked first), and renamed over it. Memory is bounded
// by one decision's lines and one parquet row group.
func writeBundle(w bundleWrite) (*results.Summary, int64, error) {
	dir, runID, sp, idx, src := w.dir, w.runID, w.sp, w.idx, w.src
	callsPath := filepath.Join(dir, results.CallsFile)
	var size int64 // bytes of the canonical calls.jsonl
	canonical := len(src) == 1 && src[0].Name() == callsPath
	if err := idx.each(func(_ int, l loc, _ outcome) error {
		if l.done() {
			canonical = canonical && l.off == size
			size += int64(l.size)
		}
		return nil
	}); err != nil {
		return nil, 0, err
	}
	if canonical {
		st, err := src[0].Stat()
		canonical = err == nil && st.Size() == size
	}
	var out *results.CallLog
	if !canonical {
		if err := checkSpace(dir, size+spareBytes(sp.count())); err != nil {
			return nil, 0, err
		}
		var err error
		if out, err = results.OpenCallLog(callsPath+".tmp", 0); err != nil {
			return nil, 0, err
		}
	}
	rows, err := results.CreateRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		if out != nil {
			out.Close()
		}
		return nil, 0, err
	}
	abort := func(err error) (*results.Summary, int64, error) {
		rows.Abort()
		if out != nil {
			out.Close()
			os.Remove(callsPath + ".tmp")
		}
		return nil, 0, err
	}
	tally := results.NewTally()
	sum := &results.Summary{RunID: runID}
	var buf []byte
	var g results.Group
	// The decisions' lines are read through windows: in a run's file they
	// stand nearly in canonical order (decisions finish about in the order
	// they start), so one read serves many.
	wins := make([]window.Reader, len(src))
	for i, f := range src {
		wins[i] = window.Reader{F: f, Limit: 256 << 10}
	}
	err = idx.each(func(j int, l loc, o outcome) error {
		if !l.done() {
			return nil
		}
		var k knownDecision
		ok := false
		if w.known != nil {
			k, ok = w.known(j, o)
		}
		row, calls, events := k.row, k.calls, k.events
		if !ok || out != nil {
			var err error
			if buf, err = wins[l.file].Slice(l.off, int64(l.size)); err != nil {
				return err
			}
		}
		if !ok {
			f := src[l.file]
			if err := results.ParseGroup(buf, &g, w.defaults); err != nil {
				return fmt.Errorf("%s: decision at byte %d: %w", f.Name(), l.off, err)
			}
			if want := sp.key(sp.global(j)); g.Key != want {
				return fmt.Errorf("%s: byte %d holds decision %s, want %s", f.Name(), l.off, g.Key, want)
			}
			var err error
			if row, err = g.Row(); err != nil {
				return fmt.Errorf("%s: byte %d: %w", f.Name(), l.off, err)
			}
			calls = len(g.Heads)
			for i := range g.Heads {
				events += len(g.Heads[i].Events)
			}
		}
		tally.Add(&row)
		if err := rows.Add(row); err != nil {
			return err
		}
		sum.Decisions++
		sum.Calls += calls
		sum.TransportEvents += events
		if row.Status != results.StatusOK {
			sum.Errors++
		}
		if out != nil {
			if _, err := out.AppendRaw(buf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return abort(err)
	}
	sum.Cells = tally.Cells()
	if out != nil {
		if err := out.Close(); err != nil {
			return abort(err)
		}
		if w.beforeRename != nil {
			if err := w.beforeRename(size); err != nil {
				return abort(err)
			}
		}
		if err := os.Rename(callsPath+".tmp", callsPath); err != nil {
			return abort(err)
		}
		// The canonical copy replaced the decisions: its name must be
		// durable before anything records its size.
		if err := syncDir(dir); err != nil {
			return abort(err)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, 0, err
	}
	sum.Parquet = rows.Check()
	return sum, size, nil
}

// syncDir makes renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// freeSpace returns the bytes available to this user on dir's file system
// (a variable so that tests can simulate a full disk).
var freeSpace = func(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// spareBytes is the room kept for decisions.parquet and summary.json of a
// bundle of n decisions, beyond the copy of calls.jsonl: 64 bytes a
// decision (the Parquet file takes 10 to 20) and 1 MiB.
func spareBytes(n int) int64 { return int64(n)*64 + 1<<20 }

// checkSpace fails, saying how much is needed, when dir's file system has
// fewer than need bytes free. An unknown free space passes.
func checkSpace(dir string, need int64) error {
	free, err := freeSpace(dir)
	if err != nil || free >= need {
		return nil
	}
	return fmt.Errorf("finishing the bundle needs %s free in %s (a canonical copy of %s and the derived files) but %s is available; every decision is kept: free space, then `stress run -resume %s` finishes it",
		byteSize(need), dir, results.CallsFile, byteSize(free), dir)
}

// byteSize formats n bytes for people: 1.5 GB, 320 kB, 12 B.
func byteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGT"[i])
}
