// Package rules is the paper's codebook (docs/specification.md section 5)
// as rules: it codes the actionability profile of an observation in both
// views, each bit with an evidence pointer and a rationale, and marks every
// bit proposed. stress capture proposes its records' codings with it, and
// the rules coder of stress code codes any corpus with it. It imports only
// study.
package rules

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpstress/stress/study"
)

// authText marks a failure text that asks for a credential.
var authText = regexp.MustCompile(study.AuthEvidence)

// credentialText finds the name of a kind of credential in a text.
var credentialText = regexp.MustCompile(`(?i)(api[ _-]?key|token|credential|authorization|password|secret)`)

// labFailureWords are the lab's causes' wordings of a failure
// (saysFailure).
var labFailureWords = regexp.MustCompile(`(?i)\b(unavailable|timed out|exceeded|required|expired|was reset|is down|did not confirm|0 records were written)\b`)

// evidence is each cause's text rule of the content view, compiled from
// its vocabulary row (study.CauseInfo.Evidence): the text names the cause
// when every pattern matches.
// They are compiled on first use: compiling them when the program
// starts cost every command, coding or not, about 2 ms and 370 KB
// (GODEBUG=inittrace=1).
var evidence = sync.OnceValue(func() map[study.Cause][]*regexp.Regexp {
	out := map[study.Cause][]*regexp.Regexp{}
	for _, c := range study.Causes {
		info, _ := c.Info()
		for _, p := range info.Evidence {
			out[c] = append(out[c], regexp.MustCompile(p))
		}
	}
	return out
})

// namesCause reports whether text names cause c by its rule (false for a
// cause without one).
func namesCause(c study.Cause, text string) bool {
	rs := evidence()[c]
	for _, re := range rs {
		if !re.MatchString(text) {
			return false
		}
	}
	return len(rs) > 0
}

// failureWords mark a result text that says something failed.
var failureWords = regexp.MustCompile(`(?i)\b(errors?|fail(?:ed|s|ure)?|invalid|not found|unknown|denied|unauthori[sz]ed|unauthenticated|forbidden|cannot|can't|could not|couldn't|unable|no such|does not exist|doesn't exist|not exist|missing|must be|must not|expected|not allowed|not permitted|exception|enoent|eacces|rejected|refused)\b`)

// SaysFailure reports whether a result text says something failed.
func SaysFailure(text string) bool { return failureWords.MatchString(text) }

// saysFailure is SaysFailure for coding, which also reads the failure
// wordings of the lab's causes (transient, rate limit, timeout, outage,
// a write with no effect).
func saysFailure(text string) bool {
	return failureWords.MatchString(text) || labFailureWords.MatchString(text)
}

// AuthMention returns the words of text that ask for a credential ("401",
// "missing api key", …), or "" when there are none.
func AuthMention(text string) string { return authText.FindString(text) }

// CredentialMention returns the first word of text that names a kind of
// credential ("token", "api key", …), or "".
func CredentialMention(text string) string { return credentialText.FindString(text) }

// nameChar reports whether b can be part of an identifier.
func nameChar(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
}

// mentions reports whether text names word on its own (not inside a
// longer identifier).
func mentions(text, word string) bool {
	if word == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(word)
		if (j == 0 || !nameChar(text[j-1])) && (end == len(text) || !nameChar(text[end])) {
			return true
		}
		i = end
	}
}

// bit makes a proposed bit.
func bit(b bool, evidence, rationale string) study.Bit {
	v := 0
	if b {
		v = 1
	}
	return study.Bit{Bit: v, Evidence: evidence, Rationale: rationale, Proposed: true}
}

// evidence pointers into an observation.
type pointers struct {
	flag string // the typed failure marker: /exception/error/code or /result/isError
	text string // the failure text: /exception/error/message or the first non-blank text block
	root string // /exception or /result
}

func pointersOf(obs json.RawMessage) pointers {
	var o struct {
		Exception json.RawMessage `json:"exception"`
		Result    *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError json.RawMessage `json:"isError"`
		} `json:"result"`
	}
	_ = json.Unmarshal(obs, &o)
	if o.Result == nil {
		return pointers{"/exception/error/code", "/exception/error/message", "/exception"}
	}
	p := pointers{"/result/isError", "/result/content", "/result"}
	if o.Result.IsError == nil {
		p.flag = "/result" // isError absent
	}
	for i, c := range o.Result.Content {
		if strings.TrimSpace(c.Text) != "" {
			p.text = fmt.Sprintf("/result/content/%d/text", i)
			break
		}
	}
	return p
}

// requestCodes are the JSON-RPC codes that say the request itself must
// change.
var requestCodes = map[int64]bool{-32600: true, -32601: true, -32602: true}

// Propose codes both views of an observation by rule (the paper's codebook,
// docs/specification.md section 5); every bit is marked proposed. code is
// the JSON-RPC code of a raised error (0 for a completed result), text the
// failure text (Scenario.ObservationText), typed whether the observation
// carries structured members (HasTyped); cause and target are the verified
// ones.
func Propose(obs json.RawMessage, surface study.Surface, code int64, cause study.Cause, target study.Target, text string, typed bool) study.ProfileCoding {
	p := pointersOf(obs)
	ctl := study.View{}
	typedNote := ""
	if typed {
		typedNote = " (structured members are present: check them by hand)"
	}
	switch surface {
	case study.ProtocolError:
		ctl["D"] = bit(true, p.flag, "A raised JSON-RPC error marks the call as failed.")
		if requestCodes[code] {
			ctl["P"] = bit(true, p.flag, fmt.Sprintf("JSON-RPC %d says the request must change (change_request), but not how.", code))
			ctl["C"] = bit(false, p.flag, fmt.Sprintf("JSON-RPC %d covers unknown tools and bad arguments alike, so it names no cause.", code))
		} else {
			ctl["P"] = bit(false, p.flag, fmt.Sprintf("JSON-RPC %d does not say which kind of response fits.", code))
			ctl["C"] = bit(false, p.flag, fmt.Sprintf("JSON-RPC %d names no cause.", code))
		}
	case study.ToolError:
		ctl["D"] = bit(true, p.flag, "isError: true marks the completed result as a failure.")
		ctl["P"] = bit(false, p.flag, "isError alone does not say which kind of response fits.")
		ctl["C"] = bit(false, p.text, "The cause appears only inside text, which is opaque in the control view."+typedNote)
	default:
		ctl["D"] = bit(false, p.flag, "isError is false, so the typed fields read as a success.")
		ctl["P"] = bit(false, p.flag, "Nothing typed signals failure, so no policy is indicated.")
		ctl["C"] = bit(false, p.text, "No typed field names a cause."+typedNote)
	}
	if cat, at := contractCategory(obs); cat != "" && ctl["D"].Bit == 1 {
		// Note: seed 002's errorCategory names a remedy family, not a
		// cause: validation calls for a changed request and permission for
		// authentication; transient leaves open an immediate or a delayed
		// replay (two policy classes), so it indicates no unique class.
		switch cat {
		case study.ValidationCategory:
			ctl["P"] = bit(true, at, "The typed errorCategory validation says the request must change (change_request).")
		case study.PermissionCategory:
			ctl["P"] = bit(true, at, "The typed errorCategory permission calls for authentication.")
		default:
			ctl["P"] = bit(false, at, fmt.Sprintf("The typed errorCategory %s does not choose between an immediate and a delayed replay, or a stop.", cat))
		}
		ctl["C"] = bit(false, at, "The typed errorCategory names a remedy family, not the cause.")
		typedNote = ""
	}
	ctl["T"] = bit(false, p.text, "No typed field names a tool, parameter or credential."+typedNote)
	ctl["E"] = bit(false, p.root, "No typed field carries a corrected request or replacement value.")
	ctl["R"] = bit(false, p.root, "No typed field states timing, unchanged-request safety or side-effect state.")

	cnt := study.View{}
	info, _ := cause.Info()
	says := saysFailure(text)
	switch {
	case surface == study.Silent:
		cnt["D"] = bit(false, p.text, "Nothing in the result says the call failed.")
	case surface == study.ProtocolError:
		cnt["D"] = bit(true, p.text, "The raised error reports a failure.")
	case surface == study.ToolError:
		cnt["D"] = bit(true, p.text, "isError: true and the text report a failure.")
	case says:
		cnt["D"] = bit(true, p.text, "The text says the call failed.")
	default:
		cnt["D"] = bit(false, p.text, "The text does not say the call failed.")
	}
	known := namesCause(cause, text) && cnt["D"].Bit == 1
	if known {
		cnt["P"] = bit(true, p.text, fmt.Sprintf("The text shows that %s, which calls for %s (%s).", info.Words, info.Preferred[0], info.Preferred[0].Class()))
		cnt["C"] = bit(true, p.text, fmt.Sprintf("The text names the cause: %s.", info.Words))
	} else {
		cnt["P"] = bit(false, p.text, "No rule finds a cause in the text, so no unique policy follows.")
		cnt["C"] = bit(false, p.text, "No rule finds the cause in the text.")
	}
	var named string
	switch target.Kind {
	case "tool", "dependency":
		named = target.Name
	case "parameter":
		named = strings.NewReplacer("~1", "/", "~0", "~").Replace(strings.TrimPrefix(target.Pointer, "/"))
		if js := jsPath(target.Pointer); js != named && mentions(text, js) {
			named = js // a nested parameter written as validators print it
		}
	case "credential":
		named = credentialText.FindString(text)
	}
	if named != "" && cnt["D"].Bit == 1 && mentions(text, named) {
		cnt["T"] = bit(true, p.text, fmt.Sprintf("The text names the %s %s.", target.Kind, named))
	} else {
		cnt["T"] = bit(false, p.text, "The text names no tool, parameter or credential to repair.")
	}
	cnt["E"] = bit(false, p.text, "No rule finds a valid replacement value or tool; check the text for one.")
	cnt["R"] = bit(false, p.text, "No rule finds retry timing, unchanged-request safety and side-effect state together.")
	return study.ProfileCoding{Control: ctl, Content: cnt}
}

// jsPath writes a JSON pointer as JavaScript validators (zod, ajv) print
// a path: /entities/0/observations as entities[0].observations.
func jsPath(pointer string) string {
	var b strings.Builder
	for i, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		if _, err := strconv.Atoi(tok); err == nil && i > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// contractCategory returns the errorCategory of seed 002's contract in an
// observation (a raised error's data or a result's structuredContent) and
// its evidence pointer, or "" when there is none.
func contractCategory(obs json.RawMessage) (study.ErrorCategory, string) {
	var o struct {
		Exception *struct {
			Error struct {
				Data *struct {
					ErrorCategory study.ErrorCategory `json:"errorCategory"`
				} `json:"data"`
			} `json:"error"`
		} `json:"exception"`
		Result *struct {
			StructuredContent *struct {
				ErrorCategory study.ErrorCategory `json:"errorCategory"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if json.Unmarshal(obs, &o) != nil {
		return "", ""
	}
	switch {
	case o.Exception != nil && o.Exception.Error.Data != nil && o.Exception.Error.Data.ErrorCategory.Valid():
		return o.Exception.Error.Data.ErrorCategory, "/exception/error/data/errorCategory"
	case o.Result != nil && o.Result.StructuredContent != nil && o.Result.StructuredContent.ErrorCategory.Valid():
		return o.Result.StructuredContent.ErrorCategory, "/result/structuredContent/errorCategory"
	}
	return "", ""
}

// Code codes a record's observation by rule (Propose with the record's
// surface, cause and target).
func Code(s *study.Scenario) study.ProfileCoding {
	var code int64
	var o struct {
		Exception *struct {
			Error struct {
				Code int64 `json:"code"`
			} `json:"error"`
		} `json:"exception"`
	}
	if json.Unmarshal(s.Observation, &o) == nil && o.Exception != nil {
		code = o.Exception.Error.Code
	}
	return Propose(s.Observation, s.Surface, code, s.Cause, s.Target, s.ObservationText(), HasTyped(s.Observation))
}

// HasTyped reports whether an observation carries structured members:
// error.data of a raised error, or a non-empty structuredContent.
func HasTyped(obs json.RawMessage) bool {
	var o struct {
		Exception *struct {
			Error struct {
				Data json.RawMessage `json:"data"`
			} `json:"error"`
		} `json:"exception"`
		Result *struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	_ = json.Unmarshal(obs, &o)
	if o.Exception != nil {
		return len(o.Exception.Error.Data) > 0
	}
	return o.Result != nil && !study.EmptyJSON(o.Result.StructuredContent)
}
