package registry

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpstress/stress/internal/input"
)

// DefaultSeed is the paper's sampling seed.
const DefaultSeed = 20260819

// PaperStrata is the paper's design: 12 repositories each from npm, PyPI
// and remote-only listings, 6 each from MCPB, OCI and other listings.
const PaperStrata = "npm=12,pypi=12,remote=12,mcpb=6,oci=6,other=6"

// orderingRule is how a stratum's repositories are ordered for the draw,
// in words (recorded in the manifest); Key computes it.
const orderingRule = `ascending lower-case hex sha256 of the bytes "stress-sample/v1" 0x00 SEED 0x00 REPOSITORY ` +
	`(SEED in decimal ASCII, REPOSITORY the canonical github.com/owner/name), ties by repository`

// orderKey returns repository's ordering key under seed (orderingRule): in
// Python, hashlib.sha256(b"stress-sample/v1\0" + str(seed).encode() +
// b"\0" + repository.encode()).hexdigest().
func orderKey(seed uint64, repository string) string {
	h := sha256.New()
	h.Write([]byte("stress-sample/v1\x00" + strconv.FormatUint(seed, 10) + "\x00" + repository))
	return hex.EncodeToString(h.Sum(nil))
}

// Allocation is how many repositories to draw from each stratum.
type Allocation map[string]int

// ParseStrata reads an allocation, "npm=12,pypi=12,…": each stratum at
// most once, counts from 0 to 1000000; strata it does not name get 0.
func ParseStrata(s string) (Allocation, error) {
	a := Allocation{}
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no strata: want STRATUM=N,… with strata %s", strings.Join(strata, ", "))
	}
	for _, part := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%s: want STRATUM=N", input.Quote(part))
		}
		if !slices.Contains(strata, name) {
			return nil, fmt.Errorf("unknown stratum %s: want one of %s", input.Quote(name), strings.Join(strata, ", "))
		}
		if _, dup := a[name]; dup {
			return nil, fmt.Errorf("stratum %s given twice", name)
		}
		k, err := strconv.Atoi(n)
		if err != nil || k < 0 || k > 1000000 {
			return nil, fmt.Errorf("stratum %s: want a count from 0 to 1000000, got %s", name, input.Quote(n))
		}
		a[name] = k
	}
	return a, nil
}

// String writes a in ParseStrata's form, strata in the order npm, pypi,
// remote, mcpb, oci, other, those with 0 left out.
func (a Allocation) String() string {
	var parts []string
	for _, s := range strata {
		if a[s] > 0 {
			parts = append(parts, s+"="+strconv.Itoa(a[s]))
		}
	}
	return strings.Join(parts, ",")
}

// Exclusion is a repository found inaccessible, to be replaced.
type Exclusion struct {
	// Repository is the canonical name.
	Repository string `json:"repository"`
	// Reason is the rest of its line in the exclusions file, "" if none.
	Reason string `json:"reason,omitempty"`
}

// ReadExclusions reads an exclusions file: one repository a line (any URL
// form NormalizeGitHub accepts), optionally followed by blanks and a
// reason; blank lines and lines starting with # are skipped. A line that
// names no GitHub repository is an error naming file and line, and so is
// a repository listed twice.
func ReadExclusions(file string, data []byte) ([]Exclusion, error) {
	text, err := input.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []Exclusion
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		url, reason, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(url, '\t'); i >= 0 {
			url, reason = url[:i], url[i+1:]+" "+reason
		}
		repo, err := NormalizeGitHub(url)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %v", file, n, input.Quote(url), err)
		}
		if first, dup := seen[repo]; dup {
			return nil, fmt.Errorf("%s:%d: %s is already excluded on line %d", file, n, repo, first)
		}
		seen[repo] = n
		out = append(out, Exclusion{Repository: repo, Reason: strings.TrimSpace(reason)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return out, nil
}

// Draw is one repository's place in its stratum's draw order.
type Draw struct {
	Stratum    string `json:"stratum"`
	Rank       int    `json:"rank"` // 1-based
	Repository string `json:"repository"`
	Key        string `json:"key"`
}

// Pick is one repository of the final sample.
type Pick struct {
	Stratum string `json:"stratum"`
	// Slot is its place among the stratum's picks (1-based): slot i is
	// the i-th draw, or its replacement.
	Slot int `json:"slot"`
	// Rank is its place in the draw order.
	Rank       int    `json:"rank"`
	Repository string `json:"repository"`
	// Replaces is the excluded repository whose slot it fills, if any.
	Replaces string   `json:"replaces,omitempty"`
	Servers  []string `json:"servers"`
}

// Replacement records an excluded draw and the repository that took its
// slot.
type Replacement struct {
	Stratum         string `json:"stratum"`
	Slot            int    `json:"slot"`
	Excluded        string `json:"excluded"`
	ExcludedRank    int    `json:"excluded_rank"`
	Replacement     string `json:"replacement"`
	ReplacementRank int    `json:"replacement_rank"`
}

// ExclusionResult is what became of an exclusion.
type ExclusionResult struct {
	Exclusion
	// Stratum and Rank place the repository in the frame; "" and 0 when
	// the frame does not hold it.
	Stratum string `json:"stratum,omitempty"`
	Rank    int    `json:"rank,omitempty"`
	// Reached says the draw came to it (an initial draw or a would-be
	// replacement), so it was skipped.
	Reached bool `json:"reached"`
}

// Shortfall is a stratum that holds fewer repositories than asked for.
type Shortfall struct {
	Stratum string `json:"stratum"`
	Asked   int    `json:"asked"`
	// Drawn is how many it gave: every repository it has that is not
	// excluded.
	Drawn    int `json:"drawn"`
	Frame    int `json:"frame"`
	Excluded int `json:"excluded"`
}

// Error says what the stratum was asked for and gave.
func (s Shortfall) Error() string {
	return fmt.Sprintf("stratum %s: asked for %d repositories, the frame holds %d (%d of them excluded): drew %d",
		s.Stratum, s.Asked, s.Frame, s.Excluded, s.Drawn)
}

// Sample is a seeded, stratified draw from a frame.
type Sample struct {
	Seed   uint64
	Strata Allocation
	// Order is the draw order: every frame repository, strata in the
	// order npm, pypi, remote, mcpb, oci, other, each by rank.
	Order        []Draw
	Picks        []Pick
	Replacements []Replacement
	Exclusions   []ExclusionResult
	Shortfalls   []Shortfall
}

// DrawSample draws alloc[s] repositories from each stratum s of frame:
// the stratum's repositories in the draw order (by a seeded sha256 of
// each repository; the manifest records the rule), the first alloc[s] of
// them, each excluded one replaced by the next repository in the order
// that is neither excluded nor already drawn. A stratum with too few
// repositories gives what it has and a Shortfall.
func DrawSample(frame []FrameEntry, seed uint64, alloc Allocation, excluded []Exclusion) *Sample {
	s := &Sample{Seed: seed, Strata: alloc}
	byStratum := map[string][]Draw{}
	servers := map[string][]string{}
	for _, e := range frame {
		byStratum[e.Stratum] = append(byStratum[e.Stratum], Draw{Stratum: e.Stratum, Repository: e.Repository, Key: orderKey(seed, e.Repository)})
		servers[e.Repository] = e.Servers
	}
	excl := map[string]int{}
	results := make([]ExclusionResult, len(excluded))
	for i, x := range excluded {
		excl[x.Repository] = i
		results[i].Exclusion = x
	}
	for _, stratum := range strata {
		order := byStratum[stratum]
		slices.SortFunc(order, func(a, b Draw) int {
			return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Repository, b.Repository))
		})
		nExcl := 0
		for i := range order {
			order[i].Rank = i + 1
			if j, ok := excl[order[i].Repository]; ok {
				results[j].Stratum, results[j].Rank = stratum, i+1
				nExcl++
			}
		}
		s.Order = append(s.Order, order...)
		k := alloc[stratum]
		if k == 0 {
			continue
		}
		next := min(k, len(order)) // index of the next candidate replacement
		drawn := 0
		for slot := 1; slot <= min(k, len(order)); slot++ {
			d := order[slot-1]
			j, isExcl := excl[d.Repository]
			if !isExcl {
				s.Picks = append(s.Picks, Pick{Stratum: stratum, Slot: slot, Rank: d.Rank, Repository: d.Repository, Servers: servers[d.Repository]})
				drawn++
				continue
			}
			results[j].Reached = true
			for next < len(order) {
				r := order[next]
				next++
				if jr, ok := excl[r.Repository]; ok {
					results[jr].Reached = true
					continue
				}
				s.Picks = append(s.Picks, Pick{Stratum: stratum, Slot: slot, Rank: r.Rank, Repository: r.Repository, Replaces: d.Repository, Servers: servers[r.Repository]})
				s.Replacements = append(s.Replacements, Replacement{Stratum: stratum, Slot: slot,
					Excluded: d.Repository, ExcludedRank: d.Rank, Replacement: r.Repository, ReplacementRank: r.Rank})
				drawn++
				break
			}
		}
		if drawn < k {
			s.Shortfalls = append(s.Shortfalls, Shortfall{Stratum: stratum, Asked: k, Drawn: drawn, Frame: len(order), Excluded: nExcl})
		}
	}
	s.Exclusions = results
	return s
}
