package runner

import (
	"os"
	"sync"
	"testing"

	"github.com/mcpstress/stress/results"
)

// TestLocTable runs on a table small enough for memory and on one in a
// file.
func TestLocTable(t *testing.T) {
	for _, n := range []int{1000, memIndexMax/recSize + 1000} {
		testLocTable(t, n)
	}
}

func testLocTable(t *testing.T, n int) {
	idx := testTable(t, t.TempDir(), n)
	_, inFile := idx.f.(*os.File)
	if inFile != (n > memIndexMax/recSize) {
		t.Errorf("%d records: in a file %v", n, inFile)
	}
	// A buffered write is seen before it reaches the file.
	idx.put(n-1, loc{off: 7, size: 9}, outcome{})
	if got := idx.get(n - 1); got != (loc{off: 7, size: 9}) {
		t.Errorf("pending record: %+v", got)
	}
	idx.put(n-1, loc{}, outcome{})
	o := outcome{ok: true, label: 6, status: 2, turns: 4, replays: 3, flags: 0b101010 | results.FlagOK | results.FlagLab, events: 65535, sums: [2]uint32{7, 1<<32 - 1}}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := w; j < n; j += 4 {
				if j%3 == 0 {
					idx.put(j, loc{off: int64(j) << 33, size: uint32(j + 1), file: int32(j % 7)}, o)
				}
			}
		}()
	}
	wg.Wait()
	done := 0
	err := idx.each(func(j int, l loc, got outcome) error {
		if j%3 != 0 {
			if l.done() || got != (outcome{}) {
				t.Errorf("record %d: %+v %+v, want empty", j, l, got)
			}
			return nil
		}
		done++
		want := loc{off: int64(j) << 33, size: uint32(j + 1), file: int32(j % 7)}
		if l != want || got != o || idx.get(j) != want {
			t.Errorf("record %d: %+v %+v, want %+v %+v", j, l, got, want, o)
		}
		return nil
	})
	if want := (n + 2) / 3; err != nil || done != want || idx.Err() != nil {
		t.Errorf("each: %v, %d records, want %d, err %v", err, done, want, idx.Err())
	}
	if !inFile {
		return
	}
	idx.Close()
	idx.get(0)
	if idx.Err() == nil {
		t.Error("a read from a closed index must be reported")
	}
}
