package capture

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpstress/stress/coding/rules"
	"github.com/mcpstress/stress/study"
)

// Note: the profile rules (the paper's codebook as rules) live in
// coding/rules, where the rules coder of stress code uses them too.

// causeOf sets the cause from the probe kind; a text asking for a
// credential makes it authentication (for probes that can yield it).
func causeOf(p study.Probe, text string) (study.Cause, string) {
	base := map[study.Probe]study.Cause{
		study.NonexistentTool: study.UnknownTool,
		study.WrongType:       study.InvalidType,
		study.MissingRequired: study.InvalidType,
		study.Sentinel:        study.InvalidValue,
	}[p]
	if p.Yields(study.AuthRequired) {
		if m := rules.AuthMention(text); m != "" {
			return study.AuthRequired, fmt.Sprintf("text rule: authentication (the failure text says %q)", m)
		}
	}
	return base, fmt.Sprintf("probe %s yields %s", p, base)
}

// targetOf is the repair target of a failure.
func targetOf(c study.Cause, p Plan, text string) study.Target {
	switch c {
	case study.UnknownTool:
		return study.Target{Kind: "tool", Name: p.Tool}
	case study.AuthRequired:
		name := "credential"
		if m := rules.CredentialMention(text); m != "" {
			name = strings.ToLower(strings.NewReplacer(" ", "_", "-", "_").Replace(m))
		}
		return study.Target{Kind: "credential", Name: name}
	}
	return study.Target{Kind: "parameter", Pointer: "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(p.Field)}
}

// Envelope is the counterfactual control envelope of
// docs/specification.md section 6 for a failure with cause code, repair
// target, preferred policy and failure text (words, the cause in words,
// when the text is empty or too long to repeat).
func Envelope(code string, target study.Target, policy study.Policy, text, words string) (json.RawMessage, error) {
	return study.MarshalEnvelope(study.EnvelopeSpec{Code: code, Target: target, Policy: policy,
		SameRequest: "unsafe", SideEffects: "none_committed", Text: text, Words: words})
}
