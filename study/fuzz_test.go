package study

import (
	"os"
	"testing"
)

// FuzzParseScenarios: any bytes give records that passed validation or
// located errors, never a panic.
func FuzzParseScenarios(f *testing.F) {
	if b, err := os.ReadFile("../manifests/corpus/paper/P06.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`[{"id":"S1"}]`))
	f.Add([]byte(`[{"observation":{"result":{"content":[]}},"profile":{"control":{"D":{"evidence":"/a/0/~1"}}}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, errs := ParseScenarios("f.json", data)
		for _, r := range recs {
			if len(r.validate()) != 0 {
				t.Fatalf("record %s passed with validation errors", r.ID)
			}
		}
		for _, e := range errs {
			if e == nil || e.Error() == "" {
				t.Fatal("empty error")
			}
		}
	})
}

// FuzzAnnouncedWait: the case-insensitive prefilter of AnnouncedWait
// never hides a wait the pattern finds.
func FuzzAnnouncedWait(f *testing.F) {
	for _, s := range []string{"", "retry after 30 s", "Rate limited; RETRY AFTER 250 ms.", "retry  after 1 s", "retry after", "x\x00retry after 5 s", "please retry after 12 ms please"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		d, ok := AnnouncedWait(text)
		if wd, wok := announced(text); d != wd || ok != wok {
			t.Errorf("%q: AnnouncedWait %v %v, the pattern alone %v %v", text, d, ok, wd, wok)
		}
	})
}
