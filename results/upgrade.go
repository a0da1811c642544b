package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/models"
)

// This file converts a bundle of an earlier format (1 or 2, see Format)
// into a new bundle of this version's: the one place that reads the
// earlier formats. Every call line of the old bundle becomes the line
// this version writes for the same call, in the same place (line n of
// the old calls.jsonl is line n of the new one); decisions.parquet and
// summary.json are copied as they are. The old bundle is only read.

// Upgraded records that a bundle was converted from an earlier format.
type Upgraded struct {
	From   string    `json:"from"`   // the directory of the bundle converted, as given
	Format int       `json:"format"` // its format (1 or 2)
	At     time.Time `json:"at"`     // when it was converted
	Binary Binary    `json:"binary"` // the stress that converted it
}

// oldLine is a call line of format 1 or 2: every field carried; the
// request's messages inline (format 1) or by ref into messages.jsonl
// (format 2, whose request leaves out its seed when it is the call's).
type oldLine struct {
	*Call
	Request struct {
		Messages []models.Message `json:"messages"`
		wireRequest
	} `json:"request"`
}

// Upgrade writes out, a bundle of format Format holding what dir, a
// bundle of format 1 or 2, holds; dir is not changed. It refuses a bundle
// of format Format (nothing to do), an out that exists and is not empty
// or lies inside dir, a damaged call line (but a torn last line, which is
// left out), a line that refers to a message messages.jsonl lacks, and a
// bundle in which a scenario of the study has no call line (its fields,
// which the new defaults.json holds, are unknown: finish the run first).
// Like merge, it writes out under a temporary name renamed into place
// once complete (internal/outdir). log receives a line saying what was
// done.
func Upgrade(ctx context.Context, dir, out string, log io.Writer) (*Record, error) {
	rec, err := readRecord(dir)
	if err != nil {
		return nil, err
	}
	from := rec.format()
	if from == Format {
		return nil, fmt.Errorf("%s is a bundle of format %d already, the one this version reads: nothing to upgrade", dir, from)
	}
	if err := outside(out, dir); err != nil {
		return nil, err
	}
	if err := outdir.Check(out, nil); err != nil {
		return nil, err
	}
	callsPath := filepath.Join(dir, CallsFile)
	var table *Messages
	if from == 2 {
		if table, err = LoadMessages(filepath.Join(dir, MessagesFile), -1); err != nil {
			return nil, err
		}
	}
	defaults, err := oldDefaults(callsPath, rec)
	if err != nil {
		return nil, err
	}
	od, err := outdir.Create(out, nil)
	if err != nil {
		return nil, err
	}
	defer od.Abort()
	od.ReportSwept(log)
	tmp := od.Path()
	if err := WriteJSON(filepath.Join(tmp, DefaultsFile), defaults); err != nil {
		return nil, err
	}
	cl, lines, torn, err := upgradeCalls(ctx, callsPath, tmp, table, defaults)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{DecisionsFile, SummaryFile} {
		if err := copyFile(filepath.Join(dir, name), filepath.Join(tmp, name)); err != nil {
			return nil, err
		}
	}
	callsSize, msgSize := cl.Size(), cl.Messages().Size()
	rec.Format, rec.CallsDurable, rec.MessagesDurable = Format, &callsSize, &msgSize
	rec.Upgraded = &Upgraded{From: dir, Format: from, At: time.Now().UTC(), Binary: BinaryInfo()}
	if err := WriteJSON(filepath.Join(tmp, ManifestFile), rec); err != nil {
		return nil, err
	}
	if err := od.Commit(); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("upgraded %s (format %d) into %s (format %d): %d call lines", dir, from, out, Format, lines)
	if torn > 0 {
		msg += fmt.Sprintf("; its torn last line (%d bytes) was left out", torn)
	}
	fmt.Fprintln(log, msg)
	return rec, nil
}

// outside fails when out is dir or lies inside it.
func outside(out, dir string) error {
	a, err1 := filepath.Abs(dir)
	b, err2 := filepath.Abs(out)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if rel, err := filepath.Rel(a, b); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("output directory %s is inside the bundle %s, which upgrade leaves as it is; choose another", out, dir)
	}
	return nil
}

// oldDefaults is the defaults table of the old bundle whose calls.jsonl
// is file: the study seed and, for each scenario, the fields of its first
// call line (every line of a scenario has the same). It records no
// coverage (Defaults.Coverage): the old bundle's renderings are not at
// hand, so no scenario is known to be unexpressed and every contrast
// pairs every scenario, as when the bundle was written.
func oldDefaults(file string, rec *Record) (*Defaults, error) {
	d := &Defaults{Seed: rec.Manifest.Seed, Scenarios: map[string]ScenarioFields{}}
	err := eachLine(file, func(b []byte, line int, _ bool) error {
		var h Head
		if _, err := jsonHead(b, &h); err != nil {
			return nil // damaged: upgradeCalls says so
		}
		if _, ok := d.Scenarios[h.Key.Scenario]; !ok {
			d.Scenarios[h.Key.Scenario] = ScenarioFields{Server: h.Server, Preferred: h.Preferred, PreferredSet: h.PreferredSet, NonHarm: h.NonHarm}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range rec.Scenarios {
		if _, ok := d.Scenarios[id]; !ok {
			return nil, fmt.Errorf("%s: no call line of scenario %s, so the server, preferred policy and non-harm set that %s holds for it are unknown; finish the run (or merge its shards) with the stress that wrote it, then upgrade", file, id, DefaultsFile)
		}
	}
	return d, nil
}

// upgradeCalls writes the lines of the old calls.jsonl file as this
// version writes them into dir's calls.jsonl and messages.jsonl; table
// is the old bundle's messages (nil for format 1). It returns the closed
// log, the number of lines written and the size of a torn last line left
// out.
func upgradeCalls(ctx context.Context, file, dir string, table *Messages, d *Defaults) (cl *CallLog, lines int, torn int64, err error) {
	ml, err := OpenMessageLog(filepath.Join(dir, MessagesFile), 0, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	if cl, err = OpenCallLog(filepath.Join(dir, CallsFile), 0); err != nil {
		ml.Close()
		return nil, 0, 0, err
	}
	cl.SetMessages(ml)
	cl.SetDefaults(d)
	err = eachLine(file, func(b []byte, line int, last bool) error {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var c Call
		err := decodeOld(b, &c, table)
		switch {
		case err != nil && last:
			torn = int64(len(b))
			return nil
		case err != nil:
			return fmt.Errorf("%s:%d: %w (a damaged line that is not the last one: resume the bundle with the stress that wrote it, or repair it, first)", file, line, err)
		}
		lines++
		if err := cl.encode(&c); err != nil {
			return fmt.Errorf("%s:%d: %w", file, line, err)
		}
		return cl.flushFull()
	})
	return cl, lines, torn, errors.Join(err, cl.Close())
}

// decodeOld decodes b, a call line of format 1 or 2, into c; table holds
// the messages a format-2 line refers to.
func decodeOld(b []byte, c *Call, table *Messages) error {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return errors.New("line has no newline")
	}
	ln := oldLine{Call: c}
	if err := json.Unmarshal(b, &ln); err != nil {
		return err
	}
	w := &ln.Request
	c.Request = models.Request{Messages: w.Messages, Seed: c.Seed, Temperature: w.Temperature, Options: w.Options, Tools: w.Tools}
	if w.Seed != nil {
		c.Request.Seed = *w.Seed
	}
	if len(w.Refs) == 0 {
		return nil
	}
	if table == nil {
		return fmt.Errorf("the request refers to %s, which a bundle of format 1 does not have", MessagesFile)
	}
	msgs, err := table.Expand(w.Refs)
	if err != nil {
		return err
	}
	c.Request.Messages = msgs
	return nil
}

// copyFile copies from to the new file to and syncs it; a missing from
// (a run killed before it wrote the file) is no error.
func copyFile(from, to string) error {
	src, err := input.OpenStream(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	return errors.Join(err, dst.Sync(), dst.Close())
}
