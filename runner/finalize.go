package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mcpstress/stress/analysis"
	"github.com/mcpstress/stress/results"
)

// openSources opens the calls.jsonl files a bundle is written from.
func openSources(files []string) ([]*os.File, error) {
	var out []*os.File
	for _, f := range files {
		fh, err := os.Open(f)
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

// writeBundle writes dir's calls.jsonl in canonical order from the
// decisions idx locates in src (shard-local index order is canonical
// order), then decisions.parquet from the same lines, and returns the
// counts. When src is dir's own calls.jsonl and it is already canonical
// and holds nothing else, it is only read. known, when not nil, gives the
// row, calls and transport events of decisions whose lines need not be
// parsed back. Memory is bounded by one decision's lines and one parquet
// row group.
func writeBundle(dir, runID string, sp *space, idx *locTable, src []*os.File, known func(j int, o outcome) (row results.Row, calls, events int, ok bool), log io.Writer) (*Summary, error) {
	callsPath := filepath.Join(dir, results.CallsFile)
	canonical := false
	if len(src) == 1 && src[0].Name() == callsPath {
		canonical = true
		var next int64
		errNotCanonical := errors.New("not canonical")
		err := idx.each(func(_ int, l loc, _ outcome) error {
			if !l.done() {
				return nil
			}
			if l.off != next {
				return errNotCanonical
			}
			next += int64(l.size)
			return nil
		})
		if err != nil && err != errNotCanonical {
			return nil, err
		}
		if st, serr := src[0].Stat(); err != nil || serr != nil || st.Size() != next {
			canonical = false
		}
	}
	var out *results.CallLog
	if !canonical {
		var err error
		if out, err = results.OpenCallLog(callsPath+".tmp", 0); err != nil {
			return nil, err
		}
	}
	rows, err := results.CreateRows(filepath.Join(dir, results.DecisionsFile))
	if err != nil {
		if out != nil {
			out.Close()
		}
		return nil, err
	}
	abort := func(err error) (*Summary, error) {
		rows.Abort()
		if out != nil {
			out.Close()
			os.Remove(callsPath + ".tmp")
		}
		return nil, err
	}
	tally := analysis.NewTally()
	sum := &Summary{RunID: runID}
	var buf []byte
	var g results.Group
	err = idx.each(func(j int, l loc, o outcome) error {
		if !l.done() {
			return nil
		}
		var row results.Row
		var calls, events int
		ok := false
		if known != nil {
			row, calls, events, ok = known(j, o)
		}
		if !ok || out != nil {
			if cap(buf) < int(l.size) {
				buf = make([]byte, l.size)
			}
			buf = buf[:l.size]
			f := src[l.file]
			if _, err := f.ReadAt(buf, l.off); err != nil {
				return fmt.Errorf("%s: reading %d bytes at %d: %w", f.Name(), l.size, l.off, err)
			}
		}
		if !ok {
			f := src[l.file]
			if err := results.ParseGroup(buf, &g); err != nil {
				return fmt.Errorf("%s: decision at byte %d: %w", f.Name(), l.off, err)
			}
			if want := sp.key(sp.global(j)); g.Key != want {
				return fmt.Errorf("%s: byte %d holds decision %s, want %s", f.Name(), l.off, g.Key, want)
			}
			row, calls = g.Row(), len(g.Heads)
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
		if err := os.Rename(callsPath+".tmp", callsPath); err != nil {
			return abort(err)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	return sum, nil
}

// syncDir makes renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
