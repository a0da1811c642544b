package dbenv

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/lab"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

var _ simulator.ShapedEnvFactory = (*Factory)(nil)

// NewShapedEnv makes the environment of one decision whose condition is
// an error shape proposed for MCP (study.ShapeConditions): every failure
// the decision meets, the proxy's and the server's own, reaches the model
// as a server following the shape's proposals alone would send it
// (conditions.ShapeResult), so the shape study runs on a real server.
func (f *Factory) NewShapedEnv(ctx context.Context, scenario string, seed int64, shape study.Condition) (simulator.Environment, error) {
	if shape != "" && !shape.Shape() {
		return nil, fmt.Errorf("%s is not an error-shape condition", shape)
	}
	e, err := f.Actor(scenario)
	if err != nil {
		return nil, err
	}
	e.shape = shape
	return e, nil
}

// reshape returns the observation obs of a failed call in the env's
// shape. The failure's cause is the scenario's where the proxy injected
// it, or where the call is the scenario's first call again (the server
// refuses it alike); any other failure of the server has no cause the
// environment knows, and gets no classification (it is moved, and
// stripped of a contract, all the same).
func (e *Env) reshape(obs json.RawMessage, c simulator.ToolCall, injected string) (json.RawMessage, error) {
	sc := e.sc
	s := study.Scenario{ID: sc.ID, Observation: obs, Surface: study.SurfaceOf(obs)}
	if injected != "" || sc.Fault == nil && c.Tool == sc.Tool {
		info, _ := sc.Class.Info()
		s.Cause, s.Code, s.Preferred = sc.Class, info.Code, sc.Preferred
		s.Target = sc.target(info.TargetKind)
	}
	raw, label, ok, err := conditions.ShapeResult(&s, e.shape)
	if err != nil || !ok {
		return obs, err
	}
	if label == conditions.ShapeErrorLabel {
		var o study.ObsException
		if err := json.Unmarshal(raw, &o.Exception.Error); err != nil {
			return nil, err
		}
		o.Exception.Type = lab.ExceptionRPC
		return study.Marshal(o)
	}
	return json.Marshal(map[string]json.RawMessage{"result": raw})
}
