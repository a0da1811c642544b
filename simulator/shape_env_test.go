package simulator

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpstress/stress/study"
)

// plainFactory is an EnvFactory that cannot serve an error shape.
type plainFactory struct{ called bool }

func (f *plainFactory) NewEnv(ctx context.Context, scenario string, seed int64) (Environment, error) {
	f.called = true
	return nil, errors.New("no environment")
}

// TestShapeNeedsShapedEnv checks a live decision under an error shape is
// refused by an environment that cannot serve it, without making one.
func TestShapeNeedsShapedEnv(t *testing.T) {
	f := &plainFactory{}
	_, _, err := startEnv(context.Background(), f, "X05", 1, study.RateLimited)
	if err == nil || !strings.Contains(err.Error(), "cannot serve the error shape ratelimited") || f.called {
		t.Errorf("err %v, called %t", err, f.called)
	}
	if _, _, err := startEnv(context.Background(), f, "X05", 1, study.Normalized); err == nil || !f.called {
		t.Errorf("a plain condition did not ask NewEnv: %v", err)
	}
}
