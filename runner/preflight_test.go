package runner_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/models"
	"github.com/mcpstress/stress/runner"
)

// hostChecked is a model whose server check fails on the host "bad" and
// whose seed probe reports what honoured says.
type hostChecked struct {
	models.Model
	host     string
	honoured bool
}

func (h *hostChecked) Verify(context.Context) (models.Facts, error) {
	if h.host == "bad" {
		return models.Facts{"host": h.host}, errors.New("digest mismatch at bad")
	}
	return models.Facts{"host": h.host}, nil
}

func (h *hostChecked) SeedCheck(context.Context) (bool, string, error) {
	return h.honoured, "probe", nil
}

var registerChecked sync.Once

func checkedManifest(t *testing.T, md manifests.Model) *manifests.Resolved {
	registerChecked.Do(func() {
		models.Register("checked-test", models.Backend{New: func(s models.Spec) (models.Model, error) {
			base, err := models.New(models.Spec{Name: s.Name, Backend: "baseline", Model: "always_stop"})
			return &hostChecked{Model: base, host: s.Host, honoured: s.Model == "honest"}, err
		}})
	})
	m, err := manifests.LoadBuiltin(manifests.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	md.Name, md.Backend = "m", "checked-test"
	m.Models = []manifests.Model{md}
	m.Replicates = 1
	return m
}

// TestVerifyEveryEndpoint: a model spread over endpoints is verified at
// each of them, and a failure names the endpoint.
func TestVerifyEveryEndpoint(t *testing.T) {
	plan, err := runner.Prepare(checkedManifest(t, manifests.Model{Model: "honest", Endpoints: []string{"good", "bad"}}), false)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := plan.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), `model "m" endpoint bad: digest mismatch`) {
		t.Fatalf("error %v, want the second endpoint named", err)
	}
	if checks["m"].Facts["host"] != "good" {
		t.Errorf("facts %v, want the first endpoint's", checks["m"].Facts)
	}
}

// TestSeedCheck: a server that ignores seeds is a warning by default and a
// refusal with seed_check: error; seed_check: off skips the probe.
func TestSeedCheck(t *testing.T) {
	var log strings.Builder
	plan, _ := runner.Prepare(checkedManifest(t, manifests.Model{Model: "liar", Host: "good"}), false)
	if err := plan.Preflight(context.Background(), &log); err != nil || !strings.Contains(log.String(), "WARNING: model \"m\": the server does not honour seeds") {
		t.Errorf("warn: %v, log %q", err, log.String())
	}
	plan, _ = runner.Prepare(checkedManifest(t, manifests.Model{Model: "liar", Host: "good", SeedCheck: "error"}), false)
	if err := plan.Preflight(context.Background(), &log); err == nil || !strings.Contains(err.Error(), "seed_check is error") {
		t.Errorf("error mode: %v", err)
	}
	log.Reset()
	plan, _ = runner.Prepare(checkedManifest(t, manifests.Model{Model: "liar", Host: "good", SeedCheck: "off"}), false)
	if err := plan.Preflight(context.Background(), &log); err != nil || log.Len() != 0 {
		t.Errorf("off: %v, log %q", err, log.String())
	}
}
