package ollamatest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

func TestScratch(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	for i, noise := range []float64{0.05, 0.1, 0.2, 0.3} {
		m, err := s.CreateTinyModel(ctx, fmt.Sprintf("m%d", i), WithLogitScale(10, noise))
		if err != nil {
			t.Fatal(err)
		}
		st, po := map[string]int{}, map[string]int{}
		bad := 0
		for seed := 1; seed <= 60; seed++ {
			r, err := chat(ctx, s.Host, m.Name, seed)
			if err != nil {
				t.Fatal(err)
			}
			var a answer
			if json.Unmarshal([]byte(r.Message.Content), &a) != nil {
				bad++
				t.Logf("bad %q", r.Message.Content)
			}
			st[a.OperationStatus]++
			po[a.RecoveryPolicy]++
		}
		t.Logf("noise %.2f bad %d %s | %s", noise, bad, fmtCounts(st), fmtCounts(po))
	}
}
