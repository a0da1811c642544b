// Package study holds the vocabulary of the recovery-policy study
// (policies, statuses, causes, surfaces, conditions) and its scenario
// records, as fixed by docs/specification.md sections 1 and 2. It imports
// nothing else of the project.
package study

import (
	"slices"
	"strings"
)

// Policy is a recovery-policy label: the model's answer
// (docs/specification.md section 1.1).
type Policy string

// The six recovery policies, in the order of
// docs/specification.md section 1.1.
const (
	ReviseArguments Policy = "revise_arguments"
	SelectTool      Policy = "select_tool"
	Authenticate    Policy = "authenticate"
	RetryLater      Policy = "retry_later"
	RetryNow        Policy = "retry_now"
	StopOrEscalate  Policy = "stop_or_escalate"
)

// Policies lists every valid policy label in canonical order.
var Policies = []Policy{ReviseArguments, SelectTool, Authenticate, RetryLater, RetryNow, StopOrEscalate}

// Class is the coarse class of a policy, used by the P coordinate of the
// actionability profile.
type Class string

// The coarse policy classes.
const (
	ChangeRequest  Class = "change_request"
	Authentication Class = "authentication"
	DelayedRetry   Class = "delayed_retry"
	Replay         Class = "replay"
	Stop           Class = "stop"
)

var policyClass = map[Policy]Class{
	ReviseArguments: ChangeRequest,
	SelectTool:      ChangeRequest,
	Authenticate:    Authentication,
	RetryLater:      DelayedRetry,
	RetryNow:        Replay,
	StopOrEscalate:  Stop,
}

var policyWords = map[Policy]string{
	ReviseArguments: "call the same tool again with corrected argument types or values",
	SelectTool:      "call a different tool",
	Authenticate:    "obtain or refresh a credential, then call again",
	RetryLater:      "replay the unchanged request after a delay",
	RetryNow:        "replay the unchanged request immediately",
	StopOrEscalate:  "stop and hand the failure to a person",
}

// Valid reports whether p is one of the six labels.
func (p Policy) Valid() bool { _, ok := policyClass[p]; return ok }

// Class returns the coarse class of p, or "" for an invalid label.
func (p Policy) Class() Class { return policyClass[p] }

// Words returns the meaning of p in plain words
// (docs/specification.md section 1.1).
func (p Policy) Words() string { return policyWords[p] }

// Status is the operation status a model reports
// (docs/specification.md section 1.2).
type Status string

// The two operation statuses.
const (
	Failed    Status = "failed"
	Succeeded Status = "succeeded"
)

// Valid reports whether s is failed or succeeded.
func (s Status) Valid() bool { return s == Failed || s == Succeeded }

// Cause is the verified cause of a failure
// (docs/specification.md section 1.3).
type Cause string

// The five causes of docs/specification.md section 1.3; Transient occurs
// only in synthetic cases and in the recovery lab.
const (
	UnknownTool  Cause = "unknown_tool"
	InvalidType  Cause = "invalid_type"
	InvalidValue Cause = "invalid_value"
	AuthRequired Cause = "authentication"
	Transient    Cause = "transient"
)

// The causes only the recovery lab induces (its fault classes of the same
// names, docs/specification.md section 7); the lab's permission class is
// AuthRequired.
const (
	RateLimit        Cause = "rate_limit"
	TimeoutCommitted Cause = "timeout_committed"
	PartialCommit    Cause = "partial_commit"
	Idempotency      Cause = "idempotency"
	StaleRevision    Cause = "stale_revision"
	SilentNoop       Cause = "silent_noop"
	UpstreamOutage   Cause = "upstream_outage"
	Locked           Cause = "locked"
)

// PaperCauses lists the five causes of docs/specification.md section 1.3 in
// canonical order: the scale of the paper's cause coding.
var PaperCauses = []Cause{UnknownTool, InvalidType, InvalidValue, AuthRequired, Transient}

// Causes lists every cause in canonical order: the paper's five, then the
// lab's.
var Causes = []Cause{UnknownTool, InvalidType, InvalidValue, AuthRequired, Transient,
	RateLimit, TimeoutCommitted, PartialCommit, Idempotency, StaleRevision, SilentNoop, UpstreamOutage, Locked}

// CauseInfo is one row of the cause vocabulary
// (docs/specification.md section 1.3 and section 7): everything the project
// says of a cause, in one place. The recovery lab adds only its behaviour
// (lab/fault.go), so a new fault class is its row here, its behaviour
// there, and its scenarios.
type CauseInfo struct {
	Code       string // namespaced cause code
	TargetKind string // kind of the repair target: tool, parameter, credential or dependency
	// Preferred are the preferred policies, the safe one first: which of
	// them a scenario prefers can depend on evidence the code does not
	// carry, and a registry that sees only the code picks the first.
	Preferred []Policy
	Words     string // the cause in plain words, for prose renderings
	// Category is seed 002's errorCategory of the cause, "" for none
	// (CategoryOf); Retryable the contract's isRetryable for a
	// record-derived contract (Retryable).
	Category  ErrorCategory
	Retryable bool
	// Explanation is the contract's explanation, a template:
	// {pointer} is the parameter's JSON pointer, {dependency} the
	// upstream dependency ("the upstream dependency NAME", else "an
	// upstream dependency"), {Dependency} the same capitalized,
	// {credential} the credential's name (else "authorization").
	Explanation string
	// SideEffects is what the counterfactual control envelope states
	// about side effects: none_committed, committed (the write was
	// applied before the failure) or unknown.
	SideEffects string
	// Surfaces are the surfaces a server can serve the cause on (and so
	// a lab scenario of it), in Surfaces order.
	Surfaces []Surface
	// RPCCode is the JSON-RPC error code the lab sends for the cause on
	// the protocol_error surface of a 2026-07-28 session (and in process):
	// -32602 for the argument checks (as the Go SDK sends them), else a
	// code of JSON-RPC's application-defined space, outside -32768 to
	// -32000 (see the constants below); a session of an earlier version
	// gets the lab's older codes (lab.LegacyCode).
	RPCCode int64
	// Evidence is the content view's cause rule (coding/rules): the
	// failure text names the cause when every pattern (a regular
	// expression) matches it; nil when no rule reads the cause.
	Evidence []string
}

// JSON-RPC codes of the lab's failures on the protocol_error surface
// (CauseInfo.RPCCode).
//
// Note: the 2026-07-28 revision reserves -32020 to -32099 for codes the
// specification defines ("Implementations MUST NOT emit any code from this
// sub-range that is not defined by this specification") and asks new
// implementations not to use -32000 to -32019 at all
// (docs/specification/2026-07-28/basic/index.mdx, "Error Codes", of
// modelcontextprotocol/modelcontextprotocol at
// b0f60ba5409db7a6582440a7b473cc0398890f15). JSON-RPC 2.0 leaves every
// code outside -32768 to -32000 to the application, so the lab's own codes
// are there: its codes before that revision (-32050 to -32055), 1000
// higher.
const (
	RPCInvalidParams = -32602 // unknown tool, invalid type, invalid value
	RPCUpstream      = -31050 // an upstream dependency failed
	RPCUnauthorized  = -31051 // authentication
	RPCConflict      = -31052 // a stale revision
	RPCBusiness      = -31053 // a business rule of the domain (out of stock, a cancelled order)
	RPCRateLimited   = -31054 // a rate limit
	RPCLocked        = -31055 // a record locked by another client
)

// The side-effect claims of the control envelope (CauseInfo.SideEffects).
const (
	NoneCommitted = "none_committed"
	Committed     = "committed"
	EffectUnknown = "unknown"
)

var (
	allServed = []Surface{ProtocolError, ToolError, SuccessShaped}
	noSuccess = []Surface{ProtocolError, ToolError}
)

var causes = map[Cause]CauseInfo{
	UnknownTool: {Code: "example.mcp.tool.unknown", TargetKind: "tool", Preferred: []Policy{SelectTool},
		Words: "the requested tool does not exist", SideEffects: NoneCommitted, Surfaces: noSuccess, RPCCode: RPCInvalidParams,
		Evidence: []string{`(?i)(unknown|not found|no such|does ?n[o']t exist|not exist|not available|unrecognized|unrecognised|not registered|invalid tool|no tool)`}},
	InvalidType: {Code: "example.mcp.arguments.invalid_type", TargetKind: "parameter", Preferred: []Policy{ReviseArguments},
		Words: "an argument has the wrong type", Category: ValidationCategory,
		Explanation: "The argument at {pointer} has the wrong JSON type.", SideEffects: NoneCommitted, Surfaces: allServed, RPCCode: RPCInvalidParams,
		Evidence: []string{`(?i)(invalid[_ ]type|expected\W+\w+.{0,40}(?:received|got)|has type\W+\w+\W+want|must be (?:a|an|of type)\b|type mismatch|not of type|wrong type|should be (?:a|an)\b|cannot unmarshal|is not an? (?:string|number|integer|boolean|array|object)|required|missing|undefined|not provided|is not set|must have)`}},
	InvalidValue: {Code: "example.mcp.arguments.invalid_value", TargetKind: "parameter", Preferred: []Policy{ReviseArguments},
		Words: "an argument has a value outside its domain", Category: ValidationCategory,
		Explanation: "The argument at {pointer} has a value outside its accepted domain.", SideEffects: NoneCommitted, Surfaces: allServed, RPCCode: RPCInvalidParams,
		Evidence: []string{`(?i)(invalid|not valid|out of range|too (?:small|big|large|long|short)|must be (?:at least|at most|greater|less|one of|positive|negative|a (?:finite|positive|valid))|not allowed|outside|no such|not found|does ?n[o']t exist|unknown|enoent|unsupported|not a valid|no file)`}},
	AuthRequired: {Code: "example.mcp.auth.required", TargetKind: "credential", Preferred: []Policy{Authenticate},
		Words: "the call lacks a valid credential", Category: PermissionCategory,
		Explanation: "Access was denied: the request carried no accepted {credential}.", SideEffects: NoneCommitted, Surfaces: allServed, RPCCode: RPCUnauthorized,
		Evidence: []string{AuthEvidence}},
	Transient: {Code: "example.mcp.upstream.unavailable", TargetKind: "dependency", Preferred: []Policy{RetryNow, RetryLater},
		Words: "an upstream dependency is temporarily unavailable", Category: TransientCategory, Retryable: true,
		Explanation: "{Dependency} is temporarily unavailable.", SideEffects: NoneCommitted, Surfaces: allServed, RPCCode: RPCUpstream,
		Evidence: []string{`(?i)(temporarily unavailable|\b503\b|service unavailable|try again)`}},

	// The recovery lab's causes (docs/specification.md section 7). Where
	// one has two preferred policies, which one a scenario prefers depends
	// on evidence the code does not carry (whether the tool is idempotent,
	// whether the write was committed, whether the failure names a batch's
	// applied prefix, whether a dropped write may still land).
	RateLimit: {Code: "example.mcp.rate_limit.exceeded", TargetKind: "dependency", Preferred: []Policy{RetryLater},
		Words: "the caller exceeded a rate limit and must wait for the window to pass", Category: TransientCategory, Retryable: true,
		Explanation: "The rate limit of {dependency} was exceeded.", SideEffects: NoneCommitted, Surfaces: allServed, RPCCode: RPCRateLimited,
		Evidence: []string{`(?i)(rate limit|too many requests|\b429\b|quota exceeded)`}},
	TimeoutCommitted: {Code: "example.mcp.timeout.after_commit", TargetKind: "dependency", Preferred: []Policy{StopOrEscalate, RetryNow},
		Words: "the call timed out after its write may have been applied", Category: TransientCategory,
		Explanation: "No answer from {dependency} arrived before the deadline; the write may have been applied.", SideEffects: Committed,
		Surfaces: noSuccess, RPCCode: RPCUpstream,
		// A bare timeout does not say the write was applied.
		Evidence: []string{`(?i)(timed out|timeout|did not confirm|deadline)`, uncertainEvidence}},
	PartialCommit: {Code: "example.mcp.batch.partial", TargetKind: "dependency", Preferred: []Policy{StopOrEscalate, ReviseArguments},
		Words: "a batch was applied only in part before it failed", Category: TransientCategory,
		Explanation: "The batch was applied only in part before {dependency} failed.", SideEffects: Committed, Surfaces: allServed, RPCCode: RPCUpstream,
		Evidence: []string{`(?i)(failed at item|partially applied|(?:were|was) applied, the rest)`}},
	Idempotency: {Code: "example.mcp.write.uncertain", TargetKind: "dependency", Preferred: []Policy{StopOrEscalate, RetryNow},
		Words: "the write was applied but the call failed, so a replay may duplicate it", Category: TransientCategory,
		Explanation: "The write reached {dependency}, but its confirmation was lost.", SideEffects: Committed, Surfaces: noSuccess, RPCCode: RPCUpstream,
		Evidence: []string{uncertainEvidence}},
	StaleRevision: {Code: "example.mcp.revision.stale", TargetKind: "parameter", Preferred: []Policy{ReviseArguments},
		Words: "the request names a revision that is no longer current", Category: ValidationCategory,
		Explanation: "The revision at {pointer} is no longer the current one.", SideEffects: NoneCommitted, Surfaces: allServed, RPCCode: RPCConflict,
		Evidence: []string{`(?i)(revision|version conflict|changed since|stale|precondition failed|\b412\b)`}},
	SilentNoop: {Code: "example.mcp.effect.missing", TargetKind: "tool", Preferred: []Policy{StopOrEscalate, RetryNow},
		Words: "the call reported success but had no effect", SideEffects: EffectUnknown, Surfaces: []Surface{SuccessShaped}, RPCCode: RPCUpstream,
		Evidence: []string{`(?i)(\b0 (?:records|rows|items) (?:were )?(?:written|changed|affected)|no effect|nothing was written)`}},
	UpstreamOutage: {Code: "example.mcp.upstream.down", TargetKind: "dependency", Preferred: []Policy{StopOrEscalate},
		Words: "an upstream dependency is down for the rest of the session", Category: TransientCategory,
		Explanation: "{Dependency} is down for the rest of the session.", SideEffects: NoneCommitted, Surfaces: allServed, RPCCode: RPCUpstream,
		Evidence: []string{`(?i)(\bdown\b|outage|will not be back|unavailable for the rest)`}},
	Locked: {Code: "example.mcp.resource.locked", TargetKind: "dependency", Preferred: []Policy{RetryLater},
		Words: "the record is locked by another client's change until the lock is released", Category: TransientCategory, Retryable: true,
		Explanation: "{Dependency} holds a lock on the record for another client's change.", SideEffects: NoneCommitted, Surfaces: allServed, RPCCode: RPCLocked,
		Evidence: []string{`(?i)(\blocked\b|\block (?:is )?held\b|\b423\b|resource busy)`}},
}

// AuthEvidence is the pattern of a failure text that asks for a
// credential (the authentication cause's evidence).
const AuthEvidence = `(?i)\b(unauthori[sz]ed|unauthenticated|not authenticated|authentication (?:is )?required|authentication failed|auth(?:orization)? required|(?:invalid|missing|expired|no) (?:api[ _-]?key|token|credentials?|access token)|api[ _-]?key (?:is )?(?:required|missing|invalid)|(?:auth_)?token (?:has |is )?expired|401)\b`

// uncertainEvidence is the pattern of a text that says a write may
// already have been applied.
const uncertainEvidence = `(?i)(may have been applied|was applied|connection .{0,40}reset)`

// Valid reports whether c is a known cause.
func (c Cause) Valid() bool { _, ok := causes[c]; return ok }

// Info returns the registry row of c; ok is false for an unknown cause.
func (c Cause) Info() (info CauseInfo, ok bool) { info, ok = causes[c]; return }

// CauseOfCode returns the cause whose namespaced code is code.
func CauseOfCode(code string) (Cause, bool) {
	for _, c := range Causes {
		if causes[c].Code == code {
			return c, true
		}
	}
	return "", false
}

// Surface is how the client normalized a failure
// (docs/specification.md section 2).
type Surface string

// The failure surfaces.
const (
	ProtocolError Surface = "protocol_error" // JSON-RPC error raised by the client
	ToolError     Surface = "tool_error"     // completed result with isError: true
	SuccessShaped Surface = "success_shaped" // isError false or absent, text says it failed
)

// Surfaces lists every surface in canonical order; Silent (capture.go)
// occurs only in captured corpora.
var Surfaces = []Surface{ProtocolError, ToolError, SuccessShaped, Silent}

// Valid reports whether s is a known surface.
func (s Surface) Valid() bool { return slices.Contains(Surfaces, s) }

// Probe is the kind of call that induced a failure.
type Probe string

// The probe kinds of the paper.
const (
	NonexistentTool Probe = "nonexistent_tool"       // a guaranteed-nonexistent tool name
	WrongType       Probe = "wrong_type"             // a wrong JSON type on a read-only tool
	Sentinel        Probe = "out_of_domain_sentinel" // a type-correct out-of-domain value
)

var probeCauses = map[Probe][]Cause{
	NonexistentTool: {UnknownTool},
	WrongType:       {InvalidType, AuthRequired},
	Sentinel:        {InvalidValue, AuthRequired},
	MissingRequired: {InvalidType, AuthRequired},
	LabCall:         Causes,
	ProxyCall:       Causes,
}

// Valid reports whether p is a known probe kind.
func (p Probe) Valid() bool { _, ok := probeCauses[p]; return ok }

// Yields reports whether probe p can verify a failure of cause c.
func (p Probe) Yields(c Cause) bool { return slices.Contains(probeCauses[p], c) }

// Condition is how a failure is shown to a model
// (docs/specification.md section 3). What a condition renders, its
// family, the contracts it carries and the contrasts it takes part in are
// its entry in conditions.Table; study keeps its name, which manifests
// validate (AllConditions), and the error shapes' parts, which the
// recovery lab serves (shapes.go).
type Condition string

// The four paired conditions of the paper, then more a manifest may name:
// Envelope shows the scenario's counterfactual control envelope
// (docs/specification.md section 6) and Category its error-category
// contract (seed 002: errorCategory, isRetryable, explanation); then the
// factorial cells, the delivery channels of the category contract and the
// misplaced-trust conditions (conditions.Table says which is which).
const (
	Normalized Condition = "normalized"
	CodeOnly   Condition = "code_only"
	Structured Condition = "structured"
	Prose      Condition = "prose"
	Envelope   Condition = "envelope"
	Category   Condition = "category"

	// The format × wording × failure-statement factorial; Structured is
	// its JSON, label, no-statement cell.
	StructuredParaphrase       Condition = "structured_paraphrase"
	SentenceLabel              Condition = "sentence_label"
	SentenceParaphrase         Condition = "sentence_paraphrase"
	StructuredFailed           Condition = "structured_failed"
	StructuredParaphraseFailed Condition = "structured_paraphrase_failed"
	SentenceLabelFailed        Condition = "sentence_label_failed"
	SentenceParaphraseFailed   Condition = "sentence_paraphrase_failed"

	// The category contract with one delivery channel dropped; Category
	// delivers both.
	CategoryStructured Condition = "category_structured" // structuredContent only
	CategoryText       Condition = "category_text"       // the serialized text copy only

	// Misplaced trust: a contract that contradicts the observation.
	EnvelopeFalseReplay    Condition = "envelope_false_replay"    // a replay declared safe after a committed side effect
	EnvelopeFalseTarget    Condition = "envelope_false_target"    // a target the observation does not mention
	CategoryFalseRetryable Condition = "category_false_retryable" // isRetryable true on a validation or permission failure
)

// The error shapes proposed for MCP (docs/error-shapes.md), each a
// condition that shows the scenario's failure as a server following the
// proposal (or the combination) would put it on the wire, in place of the
// recorded observation, and without the category contract of seed 002,
// which belongs to its own conditions:
//
//   - SEP2145 (modelcontextprotocol PR #2145): a failure the server
//     answered with a JSON-RPC error becomes a tool result with isError
//     true, carrying the same message; other failures are unchanged.
//   - ToolFailureShape (PRs #3313 and #3312): an isError result carries
//     the ToolFailure classification in _meta under ToolFailureKey.
//   - RateLimited (PR #3304): the server's own rate limit becomes the
//     JSON-RPC error -32023 with its typed retryAfterMs; a limit of an
//     upstream API the tool calls stays as the server sent it (RL-6), and
//     so does every other failure.
//   - ToolFailureSEP2145: SEP2145's move, then ToolFailure on every
//     isError result.
//   - SEP2145RateLimited: RateLimited's -32023 for the server's own rate
//     limit, SEP2145's move for every other JSON-RPC error.
//   - ToolFailureGuidance: ToolFailure with its optional agentGuidance,
//     which states the preferred policy in words (as the proposal's only
//     published example does): it carries the answer, so it is reported
//     apart (its RevealsPolicy in conditions.Table).
//   - ToolFailureApplied: ToolFailure with this project's counter-proposal,
//     a member applied that says whether the failed call's write may have
//     been applied (none, partial, unknown): no proposal defines it.
const (
	SEP2145             Condition = "sep2145"
	ToolFailureShape    Condition = "toolfailure"
	RateLimited         Condition = "ratelimited"
	ToolFailureSEP2145  Condition = "toolfailure+sep2145"
	SEP2145RateLimited  Condition = "sep2145+ratelimited"
	ToolFailureGuidance Condition = "toolfailure+guidance"
	ToolFailureApplied  Condition = "toolfailure+applied"
)

// Conditions lists the paper's four paired conditions in canonical order;
// the default studies run exactly these.
var Conditions = []Condition{Normalized, CodeOnly, Structured, Prose}

// AllConditions lists every known condition in canonical order, the
// order of conditions.Table (a test of conditions checks they agree):
// the four paired ones, Envelope and Category, the factorial cells other
// than Structured, the two single-channel category conditions, the
// misplaced-trust ones, then the error shapes proposed for MCP
// (ShapeConditions). It is here, below conditions, because manifests
// validate the names a manifest gives.
var AllConditions = []Condition{Normalized, CodeOnly, Structured, Prose, Envelope, Category,
	StructuredParaphrase, SentenceLabel, SentenceParaphrase,
	StructuredFailed, StructuredParaphraseFailed, SentenceLabelFailed, SentenceParaphraseFailed,
	CategoryStructured, CategoryText,
	EnvelopeFalseReplay, EnvelopeFalseTarget, CategoryFalseRetryable,
	SEP2145, ToolFailureShape, RateLimited, ToolFailureSEP2145, SEP2145RateLimited, ToolFailureGuidance, ToolFailureApplied}

// Valid reports whether c is a known condition (one of AllConditions).
func (c Condition) Valid() bool { return slices.Contains(AllConditions, c) }

// ErrorCategory is a category of the application-defined error contract of
// seed 002 (errorCategory in a tool's structuredContent). It names the
// remedy family, not a policy; MCP itself reserves no such field.
type ErrorCategory string

// The four error categories of seed 002.
const (
	TransientCategory  ErrorCategory = "transient"  // a temporary outage; the unchanged call may succeed later
	ValidationCategory ErrorCategory = "validation" // domain validation inside a recognized tool operation failed
	PermissionCategory ErrorCategory = "permission" // access was denied
	BusinessCategory   ErrorCategory = "business"   // a business rule forbids the operation
)

// ErrorCategories lists the four categories in canonical order.
var ErrorCategories = []ErrorCategory{TransientCategory, ValidationCategory, PermissionCategory, BusinessCategory}

// Valid reports whether e is one of ErrorCategories.
func (e ErrorCategory) Valid() bool { return slices.Contains(ErrorCategories, e) }

// CategoryOf returns the error category of cause c and whether it has one.
//
// Note: unknown_tool has none. Seed 002 defines validation as domain
// validation inside a recognized tool operation and leaves a malformed MCP
// request to protocol error handling; a call to a tool that does not exist
// never reaches a tool operation, so no tool can attach the contract (the
// servers raise a protocol error or a generic isError result), and the
// other three categories (outage, denied access, business rule) misstate
// it. Forcing it into validation would also make a client that maps
// validation to revise_arguments choose a harmful policy for 10 of the 21
// failures. invalid_type and invalid_value are validation (the argument is
// checked by the recognized tool), authentication is permission, and the
// synthetic transient cause is transient.
func CategoryOf(c Cause) (ErrorCategory, bool) {
	cat := causes[c].Category
	return cat, cat != ""
}

// Retryable reports whether the unchanged call of a failure of cause c
// may succeed later: the error-category contract's isRetryable for a
// record-derived contract (CauseInfo.Retryable). Only a passing condition
// (transient, a rate limit's window) is; a failure that may have
// committed a write is not, since the unchanged call could duplicate it.
func Retryable(c Cause) bool { return causes[c].Retryable }

// Explain fills the cause's explanation template (CauseInfo.Explanation)
// from a record's target: "" for a cause without one.
func Explain(c Cause, target Target) string {
	dep := "an upstream dependency"
	if target.Name != "" {
		dep = "the upstream dependency " + target.Name
	}
	cred := "authorization"
	if target.Name != "" {
		cred = target.Name
	}
	return strings.NewReplacer("{pointer}", target.Pointer, "{dependency}", dep,
		"{Dependency}", strings.ToUpper(dep[:1])+dep[1:], "{credential}", cred).Replace(causes[c].Explanation)
}

func join[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

// AnswerSchema returns the JSON schema of a model's answer
// (docs/specification.md section 3): an object with operation_status and
// recovery_policy, both required, each from its vocabulary. Backends use it
// as a decoding constraint when a manifest sets `format: schema`.
func AnswerSchema() map[string]any {
	labels := make([]any, len(Policies))
	for i, p := range Policies {
		labels[i] = string(p)
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"operation_status": map[string]any{"type": "string", "enum": []any{string(Failed), string(Succeeded)}},
			"recovery_policy":  map[string]any{"type": "string", "enum": labels},
		},
		"required":             []any{"operation_status", "recovery_policy"},
		"additionalProperties": false,
	}
}
