package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/study"
)

func testManifest() *manifests.Manifest {
	return &manifests.Manifest{
		Models:     []manifests.Model{{Name: "a"}, {Name: "b"}},
		Prompts:    []manifests.Prompt{{Name: "p"}, {Name: "q"}},
		Conditions: []study.Condition{study.Normalized, study.Prose, study.CodeOnly},
		Replicates: 3,
	}
}

// TestSpace checks that the canonical enumeration is a bijection between
// indices and keys, and that shards partition it.
func TestSpace(t *testing.T) {
	m := testManifest()
	ids := []string{"S1", "S2", "S3", "S4", "S5"}
	sp := newSpace(m, ids, results.Shard{})
	if sp.total() != 2*2*3*5*3 || sp.count() != sp.total() {
		t.Fatalf("total %d, count %d", sp.total(), sp.count())
	}
	if k := sp.key(0); k.Model != "a" || k.Prompt != "p" || k.Condition != study.Normalized || k.Scenario != "S1" || k.Replicate != 1 {
		t.Errorf("key 0 = %v", k)
	}
	if k := sp.key(1); k.Replicate != 2 || k.Scenario != "S1" {
		t.Errorf("key 1 = %v: the replicate must vary fastest", k)
	}
	for i := 0; i < sp.total(); i++ {
		if j, ok := sp.index(sp.key(i)); !ok || j != i {
			t.Fatalf("index(key(%d)) = %d, %v", i, j, ok)
		}
	}
	k := sp.key(7)
	k.Replicate = 4
	if _, ok := sp.index(k); ok {
		t.Error("replicate 4 of 3 has an index")
	}
	for _, n := range []int{1, 2, 7, 180, 181, 500} {
		seen := make([]int, sp.total())
		sum := 0
		for i := 1; i <= n; i++ {
			sh := newSpace(m, ids, results.Shard{I: i, N: n})
			sum += sh.count()
			for j := 0; j < sh.count(); j++ {
				g := sh.global(j)
				if l, ok := sh.local(g); !ok || l != j {
					t.Fatalf("shard %d/%d: local(global(%d)) = %d, %v", i, n, j, l, ok)
				}
				seen[g]++
			}
		}
		if sum != sp.total() {
			t.Errorf("%d shards hold %d decisions, want %d", n, sum, sp.total())
		}
		for g, c := range seen {
			if c != 1 {
				t.Fatalf("%d shards: decision %d is in %d shards", n, g, c)
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	if s, err := results.ParseShard("2/5"); err != nil || s != (results.Shard{I: 2, N: 5}) || s.String() != "2/5" {
		t.Errorf("2/5: %v %v", s, err)
	}
	for _, bad := range []string{"", "0/3", "4/3", "1/0", "a/b", "1", "1/3/4", "-1/3"} {
		if _, err := results.ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestProgressLine pins the progress report: counts, rate, ETA, errors
// and the per-model breakdown, cut to the terminal's width.
func TestProgressLine(t *testing.T) {
	sp := newSpace(testManifest(), []string{"S1", "S2"}, results.Shard{})
	idx := testTable(t, t.TempDir(), sp.count())
	for j := 0; j < 10; j++ {
		idx.put(j, loc{size: 1}, outcome{})
	}
	var b strings.Builder
	c, err := newConsole(Options{Progress: &b, Log: &b}, &results.Record{}, sp, idx)
	if err != nil {
		t.Fatal(err)
	}
	start := c.start
	for i := 36; i < 46; i++ {
		c.done1(i, i == 40)
	}
	got := c.line(start.Add(2 * time.Second))
	want := "20/72 decisions (27.8%), 5.00/s, ETA 10s, 1 errors | a 10/36 b 10/36"
	if got != want {
		t.Errorf("line\n%q, want\n%q", got, want)
	}
	c.progress(start.Add(time.Second))
	if !strings.HasPrefix(b.String(), "progress: 20/72 decisions") || !strings.HasSuffix(b.String(), "\n") {
		t.Errorf("plain progress line %q", b.String())
	}
	b.Reset()
	c.terminal, c.width = true, 30
	c.progress(start.Add(time.Second))
	c.logf("error: x")
	if got := b.String(); got != "\r\x1b[K20/72 decisions (27.8%), 10.…\r\x1b[Kerror: x\n" {
		t.Errorf("terminal output %q", got)
	}
}
