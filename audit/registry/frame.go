package registry

import (
	"cmp"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The strata of the sample, as -strata names them.
const (
	stratumNPM        = "npm"
	stratumPyPI       = "pypi"
	stratumRemoteOnly = "remote" // hosted endpoints and no package
	stratumMCPB       = "mcpb"
	stratumOCI        = "oci"
	stratumOther      = "other"
)

// strata lists the strata in the order of every output.
var strata = []string{stratumNPM, stratumPyPI, stratumRemoteOnly, stratumMCPB, stratumOCI, stratumOther}

// packageStrata are the package registry types that name a stratum, in
// the order of precedence of stratumOf.
var packageStrata = []string{stratumNPM, stratumPyPI, stratumMCPB, stratumOCI}

// stratumRule is stratumOf's rule in words (recorded in the manifest).
const stratumRule = "the first of npm, pypi, mcpb, oci that any latest record of the repository lists as a package registryType; " +
	"else remote if a record lists a remote and none lists a package; else other " +
	"(only other package types, such as nuget, or neither packages nor remotes)"

// stratumOf returns the stratum of a repository whose latest records list
// the package registry types types (lower-case) and, when remotes is set,
// at least one remote: see stratumRule.
func stratumOf(types []string, remotes bool) string {
	for _, s := range packageStrata {
		if slices.Contains(types, s) {
			return s
		}
	}
	if len(types) == 0 && remotes {
		return stratumRemoteOnly
	}
	return stratumOther
}

// FrameEntry is one repository of the sampling frame.
type FrameEntry struct {
	// Repository is the canonical name, "github.com/owner/name".
	Repository string `json:"repository"`
	// Stratum is the repository's stratum: npm, pypi, remote, mcpb, oci
	// or other (the manifest records the rule).
	Stratum string `json:"stratum"`
	// Servers are the names of the servers whose latest record points to
	// the repository, sorted.
	Servers []string `json:"servers"`
	// RegistryTypes are the package registry types those records list,
	// lower-case, sorted, each once.
	RegistryTypes []string `json:"registry_types"`
	// Remotes says some record lists a remote.
	Remotes bool `json:"remotes"`
}

// Rejection is a server's latest record that does not enter the frame.
type Rejection struct {
	// At is where the record was read.
	At Location `json:"at"`
	// Name and Version identify the record.
	Name    string `json:"name"`
	Version string `json:"version"`
	// Reason is why: ReasonDeleted, "no repository", "not a GitHub
	// repository" or what is wrong with the GitHub URL.
	Reason string `json:"reason"`
	// URL is the record's repository URL, "" when it has none.
	URL string `json:"url,omitempty"`
}

// ReasonDeleted is the Rejection reason of a server whose latest record
// the registry marks deleted: its publisher no longer lists it.
const ReasonDeleted = "status deleted"

// statusDeleted is the registry status of a deleted server.
const statusDeleted = "deleted"

// FrameOptions are BuildFrame's tunables; the zero value is the default.
type FrameOptions struct {
	// IncludeDeleted keeps servers whose latest record's registry status
	// is deleted; by default they are left out of the frame (rejected
	// with ReasonDeleted), for their publishers no longer list them.
	IncludeDeleted bool
}

// Frame is the sampling frame derived from a snapshot: the unique GitHub
// repositories of the servers' latest records.
type Frame struct {
	// Entries are the repositories, sorted by name.
	Entries []FrameEntry
	// Rejected are the latest records left out: deleted ones (unless
	// FrameOptions.IncludeDeleted) and those without a usable GitHub
	// repository, sorted by server name.
	Rejected []Rejection
	// IncludeDeleted says deleted servers were kept (FrameOptions);
	// KeptDeleted counts them.
	IncludeDeleted bool
	KeptDeleted    int
	// Records counts the records read; Servers the unique server names
	// (one latest record each); Statuses the latest records by official
	// status ("" when absent).
	Records, Servers int
	Statuses         map[string]int
}

// latestRule is how Latest picks a server's record, in words (recorded in
// the manifest).
const latestRule = "per server name: the records the registry marks isLatest if any, else all; " +
	"of those the highest version (semantic-version order where both versions parse, else byte order), " +
	"then the latest publishedAt, then the first read"

// latest returns the latest record of each server name (latestRule),
// sorted by name.
func latest(records []Record) []Record {
	best := map[string]int{}
	for i := range records {
		name := records[i].Server.Name
		j, ok := best[name]
		if !ok || newer(&records[i], &records[j]) {
			best[name] = i
		}
	}
	out := make([]Record, 0, len(best))
	for _, i := range best {
		out = append(out, records[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server.Name < out[j].Server.Name })
	return out
}

// newer reports whether a replaces b as its server's latest record.
func newer(a, b *Record) bool {
	al, bl := a.Official != nil && a.Official.IsLatest, b.Official != nil && b.Official.IsLatest
	if al != bl {
		return al
	}
	if c := compareVersions(a.Server.Version, b.Server.Version); c != 0 {
		return c > 0
	}
	return published(a).After(published(b))
}

// published is when r was published, the zero time when unknown.
func published(r *Record) time.Time {
	if r.Official == nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, r.Official.PublishedAt)
	return t
}

// BuildFrame derives the frame from a snapshot's records: the latest
// record of each server (Latest), left out when the registry marks it
// deleted (unless opt.IncludeDeleted), its repository normalized
// (NormalizeGitHub; records without one, or with another host, are
// rejected), and per repository the servers, package types and stratum.
func BuildFrame(records []Record, opt FrameOptions) *Frame {
	f := &Frame{Records: len(records), Statuses: map[string]int{}, IncludeDeleted: opt.IncludeDeleted}
	latest := latest(records)
	f.Servers = len(latest)
	byRepo := map[string]*FrameEntry{}
	for i := range latest {
		r := &latest[i]
		status := ""
		if r.Official != nil {
			status = r.Official.Status
		}
		f.Statuses[status]++
		rej := Rejection{At: r.At, Name: r.Server.Name, Version: r.Server.Version}
		if r.Server.Repository != nil && strings.TrimSpace(r.Server.Repository.URL) != "" {
			rej.URL = r.Server.Repository.URL
		}
		if strings.EqualFold(strings.TrimSpace(status), statusDeleted) {
			if !opt.IncludeDeleted {
				rej.Reason = ReasonDeleted
				f.Rejected = append(f.Rejected, rej)
				continue
			}
			f.KeptDeleted++
		}
		if r.Server.Repository == nil || strings.TrimSpace(r.Server.Repository.URL) == "" {
			rej.Reason = "no repository"
			f.Rejected = append(f.Rejected, rej)
			continue
		}
		repo, err := NormalizeGitHub(r.Server.Repository.URL)
		if err != nil {
			rej.Reason = err.Error()
			if !errors.Is(err, ErrNotGitHub) {
				rej.Reason = "GitHub URL: " + rej.Reason
			}
			f.Rejected = append(f.Rejected, rej)
			continue
		}
		e := byRepo[repo]
		if e == nil {
			e = &FrameEntry{Repository: repo, Servers: []string{}, RegistryTypes: []string{}}
			byRepo[repo] = e
		}
		e.Servers = append(e.Servers, r.Server.Name)
		for _, p := range r.Server.Packages {
			t := strings.ToLower(strings.TrimSpace(p.RegistryType))
			if t != "" && !slices.Contains(e.RegistryTypes, t) {
				e.RegistryTypes = append(e.RegistryTypes, t)
			}
		}
		if len(r.Server.Remotes) > 0 {
			e.Remotes = true
		}
	}
	f.Entries = make([]FrameEntry, 0, len(byRepo))
	for _, e := range byRepo {
		sort.Strings(e.Servers)
		sort.Strings(e.RegistryTypes)
		e.Stratum = stratumOf(e.RegistryTypes, e.Remotes)
		f.Entries = append(f.Entries, *e)
	}
	sort.Slice(f.Entries, func(i, j int) bool { return f.Entries[i].Repository < f.Entries[j].Repository })
	return f
}

// compareVersions orders two version strings: -1, 0 or +1. Where both
// parse as semantic versions (an optional "v", numeric dot-separated
// core, optional -prerelease and +build) they compare by semantic-version
// precedence; a semantic version is above one that is not; otherwise
// they compare as bytes.
func compareVersions(a, b string) int {
	va, oka := parseSemver(a)
	vb, okb := parseSemver(b)
	switch {
	case oka && okb:
		return va.compare(vb)
	case oka:
		return 1
	case okb:
		return -1
	}
	return strings.Compare(a, b)
}

type semver struct {
	core []uint64
	pre  []string
}

func parseSemver(s string) (semver, bool) {
	s = strings.TrimPrefix(s, "v")
	s, _, _ = strings.Cut(s, "+")
	core, pre, hasPre := strings.Cut(s, "-")
	var v semver
	for _, p := range strings.Split(core, ".") {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return v, false
		}
		v.core = append(v.core, n)
	}
	if hasPre {
		if pre == "" {
			return v, false
		}
		v.pre = strings.Split(pre, ".")
	}
	return v, true
}

func (a semver) compare(b semver) int {
	for i := 0; i < max(len(a.core), len(b.core)); i++ {
		var x, y uint64
		if i < len(a.core) {
			x = a.core[i]
		}
		if i < len(b.core) {
			y = b.core[i]
		}
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < min(len(a.pre), len(b.pre)); i++ {
		x, errx := strconv.ParseUint(a.pre[i], 10, 64)
		y, erry := strconv.ParseUint(b.pre[i], 10, 64)
		var c int
		switch {
		case errx == nil && erry == nil:
			c = cmp.Compare(x, y)
		case errx == nil:
			c = -1
		case erry == nil:
			c = 1
		default:
			c = strings.Compare(a.pre[i], b.pre[i])
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a.pre), len(b.pre))
}
