package analysis_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/mcpstress/stress/analysis"
)

// TestJSONFullPrecision: numbers in the JSON output are the shortest
// decimal that reads back as the same float64 (what encoding/json prints
// for a float64), so tiny p-values are not printed as 0 and every value
// round-trips exactly; undefined values are null.
func TestJSONFullPrecision(t *testing.T) {
	for _, x := range []float64{1.8e-15, 2.0e-9, 4.930380657631324e-32, 5e-7, 0.1 + 0.2, 1.0 / 3, 0.4380952380952381, -0.05, 0, 1} {
		t.Run(fmt.Sprint(x), func(t *testing.T) {
			b, err := json.Marshal(analysis.Num(x))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(x)
			if string(b) != string(want) {
				t.Errorf("Num(%s) prints %s, want %s", strconv.FormatFloat(x, 'g', -1, 64), b, want)
			}
			var back float64
			if err := json.Unmarshal(b, &back); err != nil || back != x {
				t.Errorf("Num(%v) prints %s, which reads back as %v (%v)", x, b, back, err)
			}
			b, err = json.Marshal(analysis.Bounds{Lo: x, Hi: 1 - x/3})
			if err != nil {
				t.Fatal(err)
			}
			var iv [2]float64
			if err := json.Unmarshal(b, &iv); err != nil || iv[0] != x || iv[1] != 1-x/3 {
				t.Errorf("Bounds{%v, %v} prints %s, which reads back as %v (%v)", x, 1-x/3, b, iv, err)
			}
		})
	}
	for _, v := range []any{analysis.Num(math.NaN()), analysis.Num(math.Inf(1)), analysis.Bounds{Lo: math.NaN(), Hi: 1}, analysis.Bounds{Lo: 0, Hi: math.Inf(1)}} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			if b, err := json.Marshal(v); err != nil || string(b) != "null" {
				t.Errorf("%#v prints %s (%v), want null", v, b, err)
			}
		})
	}
}
