package baseline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpstress/stress/models"
)

// TestDelayOption checks delay_ms: answers take that long, a cancelled
// context ends the wait, and bad values are errors naming the option.
func TestDelayOption(t *testing.T) {
	m, err := New(models.Spec{Name: "slow", Model: AlwaysStop, Options: map[string]any{delayOption: uint64(30)}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := m.Generate(context.Background(), models.Request{}); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("answered after %v, want ≥ 30 ms", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, models.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	for _, v := range []any{-1.0, 700000, "fast"} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			_, err := New(models.Spec{Name: "x", Model: AlwaysStop, Options: map[string]any{delayOption: v}})
			if err == nil || !strings.Contains(err.Error(), "option delay_ms") {
				t.Errorf("delay_ms %v: error %v", v, err)
			}
		})
	}
}
