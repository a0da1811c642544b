package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/env"
	"github.com/mcpstress/stress/env/mcpenv"
	"github.com/mcpstress/stress/internal/input"
	"github.com/mcpstress/stress/manifests"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// cmdRender defines render's flags on fs and returns the action that
// prints the messages a model receives for one scenario and condition.
func cmdRender(fs *flag.FlagSet) action {
	id := fs.String("scenario", "", "scenario `ID`, e.g. S07 (required)")
	cond := fs.String("condition", "", fmt.Sprintf("condition `C`, one of %v (required)", study.AllConditions))
	promptFile := fs.String("prompt", "", "prompt template `FILE` (default: the manifest's first prompt)")
	manifest := fs.String("manifest", "", "manifest `M` whose corpus and prompt to use (default: the built-in one)")
	replays := fs.Int("replays", 0, "also render `N` replay messages (0 to 10)")
	observation := fs.String("observation", "", "render the replay messages as live replays returning the observation in JSON `FILE` (the prompt's live template)")
	policy := fs.String("policy", string(study.RetryNow), "with -observation: the policy `P` the live replays executed")
	asJSON := fs.Bool("json", false, "print the messages as a JSON array")
	act := fs.Bool("act", false, "render the action task (task: act): the tools and the failing call of the scenario in its live environment (-env); default prompt manifests/prompts/act.tmpl")
	envName := fs.String("env", "", "with -act: the environment `NAME` whose scenario to start (default: the manifest's environment, else "+env.DefaultAct+")")
	mcpServers := fs.String("mcp-servers", "", "with -act and the mcp environment: `DIR` of the reference MCP servers' packages (default: $"+mcpenv.ServersVar+", else "+mcpenv.DefaultServers+" found from the working directory up)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if (*envName != "" || *mcpServers != "") && !*act {
			return usageError("render: flags -env and -mcp-servers go with -act")
		}
		c := study.Condition(*cond)
		if !c.Valid() {
			return usageError("render: flag -condition: unknown condition %q (want one of %v)", *cond, study.AllConditions)
		}
		if *replays < 0 || *replays > 10 {
			return usageError("render: flag -replays: want 0 to 10, got %d", *replays)
		}
		pol := study.Policy(*policy)
		if !pol.Valid() || pol == study.StopOrEscalate {
			return usageError("render: flag -policy: want a policy the harness executes (%v but stop_or_escalate), got %q", study.Policies, *policy)
		}
		var obs json.RawMessage
		if *observation != "" {
			b, err := input.ReadFile(*observation, input.Observation)
			if err == nil {
				b, err = input.Decode(b)
			}
			if err == nil {
				if cerr := input.CheckJSON(b); cerr != nil {
					err = fmt.Errorf("%s: %w", *observation, cerr)
				}
			}
			if err == nil && !json.Valid(b) {
				err = fmt.Errorf("%s: not valid JSON: %s", *observation, input.Snippet(string(b)))
			}
			if err != nil {
				return fmt.Errorf("render: flag -observation: %w", err)
			}
			obs = b
		}
		m, err := loadManifest(*manifest)
		if err != nil {
			return err
		}
		var s *study.Scenario
		for i := range m.Corpus.Scenarios {
			if m.Corpus.Scenarios[i].ID == *id {
				s = &m.Corpus.Scenarios[i]
			}
		}
		var actEnv simulator.Actor
		if *act {
			e, first, err := env.Act(ctx, m, *envName, *id, env.Options{Servers: *mcpServers})
			if err != nil {
				return fmt.Errorf("render: flag -act: %w", err)
			}
			if c, ok := e.(io.Closer); ok {
				defer c.Close()
			}
			actEnv = e
			if s == nil {
				// Note: a scenario without a corpus record is rendered
				// from its environment's first observation, under the
				// normalized condition only (the others need the record's
				// coding).
				if c != study.Normalized {
					return usageError("render: flag -condition: scenario %s has no record in corpus %s, so only %s renders", *id, m.Corpus.Files[0].Path, study.Normalized)
				}
				s = &study.Scenario{ID: *id, Observation: first}
			}
		}
		if s == nil {
			return usageError("render: flag -scenario: no scenario %q in corpus %s", *id, m.Corpus.Files[0].Path)
		}
		name, file, text := m.Prompts[0].Name, m.Prompts[0].Path, m.Prompts[0].Text
		if *act && *promptFile == "" {
			raw, err := manifests.Builtin.ReadFile("prompts/act.tmpl")
			if err != nil {
				return err
			}
			name, file, text = "act", "prompts/act.tmpl", string(raw)
		}
		if *promptFile != "" {
			b, err := input.ReadFile(*promptFile, input.Prompt)
			if err == nil {
				if b, err = input.Decode(b); err != nil {
					err = fmt.Errorf("%s: %w", *promptFile, err)
				}
			}
			if err != nil {
				return fmt.Errorf("render: flag -prompt: %w", err)
			}
			name, file, text = filepath.Base(*promptFile), *promptFile, string(b)
		}
		p, err := conditions.ParsePrompt(name, file, text)
		if err != nil {
			return err
		}
		var msgs []conditions.Message
		if actEnv != nil {
			var tools []json.RawMessage
			if tools, err = actEnv.Tools(ctx); err != nil {
				return err
			}
			task := ""
			if a, ok := actEnv.(simulator.Asker); ok {
				task = a.Asked()
			}
			msgs, err = p.InitialAct(s, c, tools, actEnv.First().JSON(), task)
		} else {
			msgs, err = p.Initial(s, c)
		}
		if err != nil {
			return err
		}
		if obs == nil {
			pol = study.RetryNow // stored replay replays only retry_now
		}
		if msgs, err = p.Replays(msgs, s, c, *replays, pol, obs); err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			return enc.Encode(msgs)
		}
		return conditions.WriteMessages(stdout, msgs)
	}
}
