package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpstress/stress/audit/registry"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/internal/outdir"
	"github.com/mcpstress/stress/internal/parallel"
)

// sampleLong follows sample's forms in its help.
const sampleLong = `A registry snapshot is server.json records as the registry's API serves
them: GET /v0/servers pages, a JSON array of entries, or JSON lines (a
directory stands for its *.json and *.jsonl files). The frame is the unique
GitHub repositories of the servers' latest records (a server the registry
marks deleted is left out unless -include-deleted); each repository has one
stratum: the first of npm, pypi, mcpb, oci its records list as a package
type, else remote when they list only remotes, else other. Each stratum is
ordered by sha256("stress-sample/v1" 0x00 SEED 0x00 REPOSITORY), the first N
drawn, and every -exclude'd draw replaced by the next in its stratum.
DIR receives frame.jsonl, draws.jsonl, exclusions.jsonl, replacements.jsonl,
sample.jsonl, rejected.jsonl, manifest.json and SHA256SUMS (with -fetch
also the pages, under snapshot/); the same inputs write the same bytes.
`

// cmdSample defines sample's flags on fs and returns the action that
// draws the seeded, stratified sample of source repositories.
func cmdSample(fs *flag.FlagSet) action {
	out := fs.String("out", "", "directory `DIR` to write (required; must not exist or be empty)")
	seed := fs.Uint64("seed", registry.DefaultSeed, "sampling seed `S`")
	strata := fs.String("strata", registry.PaperStrata, "repositories to draw per stratum, `LIST` of STRATUM=N (strata npm, pypi, remote, mcpb, oci, other)")
	exclude := fs.String("exclude", "", "`FILE` of repositories found inaccessible, one a line (optionally followed by a reason); each is replaced by the next in its stratum")
	fetch := fs.String("fetch", "", "page the registry API at `URL` (a base URL or its /v0/servers endpoint) instead of reading snapshot files")
	frameFile := fs.String("frame", "", "draw from the frame `FILE` a previous sample wrote (frame.jsonl) instead of a snapshot")
	var allowRedirect repeatedFlag
	fs.Var(&allowRedirect, "allow-redirect-host", "with -fetch: follow a redirect to `HOST` (or HOST:PORT) too; a redirect to a host other than URL's is refused (repeatable)")
	includeDeleted := fs.Bool("include-deleted", false, "keep servers the registry marks deleted in the frame (by default they are left out: their publishers no longer list them)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := outdir.Check(*out, nil); err != nil {
			return usageError("sample: flag -out: %v", err)
		}
		sources := 0
		for _, set := range []bool{len(args) > 0, *fetch != "", *frameFile != ""} {
			if set {
				sources++
			}
		}
		if sources != 1 {
			return usageError("sample: give snapshot files, -fetch URL or -frame FILE (exactly one)")
		}
		if len(allowRedirect) > 0 && *fetch == "" {
			return usageError("sample: flag -allow-redirect-host goes with -fetch")
		}
		for _, h := range allowRedirect {
			if err := registry.CheckAllowHost(h); err != nil {
				return usageError("sample: flag -allow-redirect-host: %v", err)
			}
		}
		if *includeDeleted && *frameFile != "" {
			return usageError("sample: flag -include-deleted goes with a snapshot or -fetch: a frame file is drawn from as it is")
		}
		frameOpt := registry.FrameOptions{IncludeDeleted: *includeDeleted}
		alloc, err := registry.ParseStrata(*strata)
		if err != nil {
			return usageError("sample: flag -strata: %v", err)
		}
		var excl []registry.Exclusion
		if *exclude != "" {
			data, err := input.ReadFile(*exclude, input.Exclusions)
			if err != nil {
				return fmt.Errorf("sample: flag -exclude: %w", err)
			}
			if excl, err = registry.ReadExclusions(*exclude, data); err != nil {
				return fmt.Errorf("sample: flag -exclude: %w", err)
			}
		}
		r := &registry.Result{Fetched: *fetch}
		var pages [][]byte
		switch {
		case *frameFile != "":
			data, err := input.ReadFile(*frameFile, input.Frame)
			if err != nil {
				return fmt.Errorf("sample: flag -frame: %w", err)
			}
			entries, err := registry.ReadFrame(*frameFile, data)
			if err != nil {
				return fmt.Errorf("sample: flag -frame: %w", err)
			}
			r.Frame, r.FromFrame = &registry.Frame{Entries: entries}, true
			r.Inputs = []registry.Input{inputOf(filepath.Base(*frameFile), data, len(entries))}
		case *fetch != "":
			if _, err := registry.ListURL(*fetch); err != nil {
				return usageError("sample: flag -fetch: %v", err)
			}
			var recs []registry.Record
			err := registry.Fetch(ctx, *fetch, registry.FetchOptions{AllowRedirectHosts: allowRedirect}, func(body []byte) error {
				pages = append(pages, body)
				name := fmt.Sprintf("page-%05d.json", len(pages))
				rs, errs := registry.Decode(registry.SnapshotDir+"/"+name, body)
				recs = append(recs, rs...)
				r.Problems = append(r.Problems, errs...)
				r.Inputs = append(r.Inputs, inputOf(name, body, len(rs)))
				return nil
			})
			var re *registry.RedirectError
			if errors.As(err, &re) {
				return fmt.Errorf("sample: flag -fetch: %w (give -allow-redirect-host %s to follow it)", err, re.Host)
			}
			if err != nil {
				return fmt.Errorf("sample: %w", err)
			}
			r.Frame = registry.BuildFrame(recs, frameOpt)
		default:
			files, err := snapshotFiles(args)
			if err != nil {
				return fmt.Errorf("sample: %w", err)
			}
			var recs []registry.Record
			for _, d := range decodeFiles(files) {
				recs = append(recs, d.records...)
				r.Problems = append(r.Problems, d.problems...)
				if d.input.File != "" {
					r.Inputs = append(r.Inputs, d.input)
				}
			}
			r.Frame = registry.BuildFrame(recs, frameOpt)
		}
		r.Sample = registry.DrawSample(r.Frame.Entries, *seed, alloc, excl)
		for _, p := range r.Problems {
			fmt.Fprintf(stderr, "stress sample: %v\n", p)
		}
		for _, x := range r.Sample.Exclusions {
			if x.Stratum == "" {
				fmt.Fprintf(stderr, "stress sample: warning: excluded repository %s is not in the frame\n", x.Repository)
			}
		}
		m, err := r.Write(*out, pages)
		if err != nil {
			return fmt.Errorf("sample: %w", err)
		}
		writeSampleSummary(stdout, r, m, *out)
		var errs []error
		if n := len(r.Problems); n > 0 {
			errs = append(errs, fmt.Errorf("%d snapshot records or files could not be read (above, and in %s): the frame may be incomplete",
				n, filepath.Join(*out, registry.ManifestFile)))
		}
		for _, s := range r.Sample.Shortfalls {
			errs = append(errs, s)
		}
		if len(errs) > 0 {
			return fmt.Errorf("sample: %w", errors.Join(errs...))
		}
		return nil
	}
}

// decoded is one snapshot file read.
type decoded struct {
	records  []registry.Record
	problems []error
	input    registry.Input // zero when the file could not be read
}

// decodeFiles reads and decodes the snapshot files, as many at once as
// there are CPUs, and returns them in order.
func decodeFiles(files []string) []decoded {
	out := make([]decoded, len(files))
	parallel.For(len(files), func(i int) {
		f := files[i]
		data, err := input.ReadFile(f, input.Snapshot)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			out[i].problems = []error{&registry.RecordError{At: registry.Location{File: f}, Err: err}}
			return
		}
		out[i].records, out[i].problems = registry.Decode(f, data)
		out[i].input = inputOf(filepath.Base(f), data, len(out[i].records))
	})
	return out
}

// inputOf describes a snapshot or frame file for the manifest.
func inputOf(name string, data []byte, records int) registry.Input {
	sum := sha256.Sum256(data)
	return registry.Input{File: name, SHA256: hex.EncodeToString(sum[:]), Bytes: len(data), Records: records}
}

// snapshotFiles expands the arguments: a directory stands for its *.json
// and *.jsonl files, sorted by name.
func snapshotFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".jsonl")) {
				names = append(names, filepath.Join(a, e.Name()))
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("directory %s holds no *.json or *.jsonl file", a)
		}
		sort.Strings(names)
		out = append(out, names...)
	}
	return out, nil
}

// writeSampleSummary prints the frame's funnel and the per-stratum draw.
func writeSampleSummary(w io.Writer, r *registry.Result, m *registry.Manifest, dir string) {
	f := r.Frame
	if r.FromFrame {
		fmt.Fprintf(w, "frame %s: %d GitHub repositories\n", input.Quote(r.Inputs[0].File), len(f.Entries))
	} else {
		rej := r.RejectedCounts()
		var parts []string
		for _, reason := range slices.Sorted(maps.Keys(rej)) {
			parts = append(parts, fmt.Sprintf("%s %d", reason, rej[reason]))
		}
		fmt.Fprintf(w, "snapshot: %d records, %d servers (one latest record each), %d unique GitHub repositories\n",
			f.Records, f.Servers, len(f.Entries))
		if len(f.Rejected) > 0 {
			fmt.Fprintf(w, "latest records left out of the frame: %d (%s)\n", len(f.Rejected), strings.Join(parts, ", "))
		}
		if f.IncludeDeleted {
			fmt.Fprintf(w, "servers the registry marks deleted, kept (-include-deleted): %d\n", f.KeptDeleted)
		}
	}
	fmt.Fprintf(w, "seed %d, strata %s\n\n", r.Sample.Seed, r.Sample.Strata)
	fmt.Fprintf(w, "%-8s %8s %6s %6s %9s %9s\n", "stratum", "frame", "asked", "drawn", "excluded", "replaced")
	var t registry.StratumCounts
	for _, c := range r.Counts() {
		fmt.Fprintf(w, "%-8s %8d %6d %6d %9d %9d\n", c.Stratum, c.Frame, c.Asked, c.Drawn, c.Excluded, c.Replaced)
		t.Frame += c.Frame
		t.Asked += c.Asked
		t.Drawn += c.Drawn
		t.Excluded += c.Excluded
		t.Replaced += c.Replaced
	}
	fmt.Fprintf(w, "%-8s %8d %6d %6d %9d %9d\n\n", "total", t.Frame, t.Asked, t.Drawn, t.Excluded, t.Replaced)
	fmt.Fprintf(w, "wrote %s: the sample in %s; the frame in %s, sha256 %s; every file's sha256 in %s\n",
		dir, registry.SampleFile, registry.FrameFile, m.FrameSHA256, registry.SumsFile)
}
