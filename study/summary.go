package study

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// CorpusCounts are the counts of a corpus in the form
// docs/specification.md section 2 gives the paper's: servers, protocol
// versions, probes, cluster sizes, causes and surfaces; and, for captured
// records, views, wire surfaces, failure texts quoting a JSON-RPC code and
// unconfirmed codings.
type CorpusCounts struct {
	Scenarios      int                       `json:"scenarios"`
	Servers        int                       `json:"servers"`
	VersionServers map[string]int            `json:"protocol_versions"` // version: servers
	ProbeFailures  map[Probe]int             `json:"probe_failures"`    // probe: failures
	ProbeServers   map[Probe]int             `json:"probe_servers"`     // probe: servers with such a failure
	ClusterSizes   map[int]int               `json:"cluster_sizes"`     // failures per server: servers
	Causes         map[Cause]int             `json:"causes"`
	Surfaces       map[Surface]int           `json:"surfaces"`
	SurfaceCauses  map[Surface]map[Cause]int `json:"surface_causes"`
	ProtocolCodes  map[int64]int             `json:"protocol_error_codes"` // JSON-RPC code: protocol errors
	Captured       int                       `json:"captured"`             // records with capture provenance
	Views          map[string]int            `json:"views,omitempty"`
	WireSurfaces   map[Surface]int           `json:"wire_surfaces,omitempty"`
	TextCodes      map[int]int               `json:"text_codes,omitempty"` // code quoted in the failure text: records
	Proposed       int                       `json:"proposed"`             // records with a bit no person has confirmed
}

// CountCorpus counts a corpus.
func CountCorpus(scenarios []Scenario) CorpusCounts {
	c := CorpusCounts{
		Scenarios: len(scenarios), VersionServers: map[string]int{}, ProbeFailures: map[Probe]int{},
		ProbeServers: map[Probe]int{}, ClusterSizes: map[int]int{}, Causes: map[Cause]int{},
		Surfaces: map[Surface]int{}, SurfaceCauses: map[Surface]map[Cause]int{}, ProtocolCodes: map[int64]int{},
	}
	perServer := map[string]int{}
	version := map[string]string{}
	probeServers := map[Probe]map[string]bool{}
	for i := range scenarios {
		s := &scenarios[i]
		perServer[s.Server]++
		version[s.Server] = s.ProtocolVersion
		c.ProbeFailures[s.Probe]++
		if probeServers[s.Probe] == nil {
			probeServers[s.Probe] = map[string]bool{}
		}
		probeServers[s.Probe][s.Server] = true
		c.Causes[s.Cause]++
		c.Surfaces[s.Surface]++
		if c.SurfaceCauses[s.Surface] == nil {
			c.SurfaceCauses[s.Surface] = map[Cause]int{}
		}
		c.SurfaceCauses[s.Surface][s.Cause]++
		if s.Surface == ProtocolError {
			var o observation
			if json.Unmarshal(s.Observation, &o) == nil && o.Exception != nil && o.Exception.Error.Code != nil {
				c.ProtocolCodes[int64(*o.Exception.Error.Code)]++
			}
		}
		proposed := false
		for _, v := range []View{s.Profile.Control, s.Profile.Content} {
			for _, b := range v {
				proposed = proposed || b.Proposed
			}
		}
		if proposed {
			c.Proposed++
		}
		if s.Capture != nil {
			c.Captured++
			if c.Views == nil {
				c.Views, c.WireSurfaces, c.TextCodes = map[string]int{}, map[Surface]int{}, map[int]int{}
			}
			c.Views[s.Capture.View]++
			c.WireSurfaces[s.Capture.WireSurface]++
			if s.Capture.TextCode != nil {
				c.TextCodes[*s.Capture.TextCode]++
			}
		}
	}
	c.Servers = len(perServer)
	for _, v := range version {
		c.VersionServers[v]++
	}
	for p, ss := range probeServers {
		c.ProbeServers[p] = len(ss)
	}
	for _, n := range perServer {
		c.ClusterSizes[n]++
	}
	return c
}

// WriteText prints the counts as sentences in the paper's form, e.g.
// "Servers: 10. Protocol versions: 2025-03-26 on 3 servers, …".
func (c CorpusCounts) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Corpus: %s from %s.\n", plural(c.Scenarios, "failure"), plural(c.Servers, "server"))
	versions := slices.Sorted(maps.Keys(c.VersionServers))
	var vs []string
	for i, v := range versions {
		unit := ""
		if i == 0 {
			unit = " servers"
			if c.VersionServers[v] == 1 {
				unit = " server"
			}
		}
		vs = append(vs, fmt.Sprintf("%s on %d%s", v, c.VersionServers[v], unit))
	}
	fmt.Fprintf(&b, "Servers: %d. Protocol versions: %s.\n", c.Servers, strings.Join(vs, ", "))
	var ps []string
	for _, p := range Probes {
		if c.ProbeFailures[p] > 0 {
			ps = append(ps, fmt.Sprintf("%s %d (%s)", p, c.ProbeFailures[p], plural(c.ProbeServers[p], "server")))
		}
	}
	fmt.Fprintf(&b, "Probes (failures, servers): %s.\n", strings.Join(ps, ", "))
	sizes := slices.SortedFunc(maps.Keys(c.ClusterSizes), descending)
	var cs []string
	for i, n := range sizes {
		unit := " servers"
		if c.ClusterSizes[n] == 1 {
			unit = " server"
		}
		if i > 0 {
			unit = ""
		}
		fail := " failures"
		if n == 1 {
			fail = " failure"
		}
		if i > 0 {
			fail = ""
		}
		cs = append(cs, fmt.Sprintf("%d%s with %d%s", c.ClusterSizes[n], unit, n, fail))
	}
	fmt.Fprintf(&b, "Cluster sizes: %s.\n", strings.Join(cs, ", "))
	fmt.Fprintf(&b, "Causes: %s.\n", causeList(c.Causes))
	var ss []string
	for _, s := range Surfaces {
		n := c.Surfaces[s]
		if n == 0 {
			continue
		}
		detail := causeList(c.SurfaceCauses[s])
		if s == ProtocolError && len(c.ProtocolCodes) > 0 {
			codes := slices.SortedFunc(maps.Keys(c.ProtocolCodes), descending)
			var parts []string
			for _, code := range codes {
				parts = append(parts, fmt.Sprintf("%d x%d", code, c.ProtocolCodes[code]))
			}
			detail = "JSON-RPC " + strings.Join(parts, ", ") + "; " + detail
		}
		ss = append(ss, fmt.Sprintf("%s %d (%s)", s, n, detail))
	}
	fmt.Fprintf(&b, "Surfaces (as the client normalized them): %s.\n", strings.Join(ss, ", "))
	if c.Captured > 0 {
		views := slices.Sorted(maps.Keys(c.Views))
		var vw []string
		for _, v := range views {
			vw = append(vw, fmt.Sprintf("%s %d", v, c.Views[v]))
		}
		fmt.Fprintf(&b, "Captured records: %d. Views: %s.\n", c.Captured, strings.Join(vw, ", "))
		var wire []string
		for _, s := range Surfaces {
			if n := c.WireSurfaces[s]; n > 0 {
				wire = append(wire, fmt.Sprintf("%s %d", s, n))
			}
		}
		fmt.Fprintf(&b, "Surfaces on the wire: %s.\n", strings.Join(wire, ", "))
		total := 0
		var tc []string
		for _, code := range slices.SortedFunc(maps.Keys(c.TextCodes), descending) {
			total += c.TextCodes[code]
			tc = append(tc, fmt.Sprintf("%d x%d", code, c.TextCodes[code]))
		}
		if total == 0 {
			tc = []string{"none"}
		}
		fmt.Fprintf(&b, "Failure texts quoting a JSON-RPC code: %d (%s).\n", total, strings.Join(tc, ", "))
	}
	if c.Proposed > 0 {
		fmt.Fprintf(&b, "Proposed codings awaiting a person: %s.\n", plural(c.Proposed, "record"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func causeList(m map[Cause]int) string {
	var parts []string
	for _, c := range Causes {
		if m[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, m[c]))
		}
	}
	return strings.Join(parts, ", ")
}

// descending orders numbers from the largest.
func descending[T cmp.Ordered](a, b T) int { return cmp.Compare(b, a) }
