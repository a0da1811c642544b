package failclosed

import (
	"fmt"
	"strings"

	"github.com/mcpstress/stress/study"
)

// categoryMembers are the members of the error-category contract.
var categoryMembers = set("errorCategory", "isRetryable", "retriable", "explanation", "nextAction")

// contract is a checked error-category contract, with retryability
// normalized across the isRetryable / retriable spellings.
type contract struct {
	category    study.ErrorCategory
	retryable   bool
	explanation string
	nextAction  string
	hasNext     bool
}

// DecideCategory checks raw, the bytes of one completed tool result
// carrying the error-category contract of seed 002, and returns the policy
// the client follows, or stop_or_escalate with a Reason. The contract:
//
//	{"resultType": "complete", "isError": true,
//	 "content": [{"type": "text", "text": "{\"errorCategory\":\"validation\",\"isRetryable\":false,\"explanation\":\"…\"}"}],
//	 "structuredContent": {"errorCategory": "validation", "isRetryable": false,
//	                       "explanation": "The start date is later than the end date.",
//	                       "nextAction": "Correct the date range."}}
//
// The checks, in order: the shape both contracts share (size, JSON, a
// completed result with well-formed content, isError: true); structuredContent
// is an object with no member but errorCategory, isRetryable, retriable,
// explanation and nextAction; errorCategory is one of the four categories;
// retryability is given as a boolean, by isRetryable or its alias retriable
// (Note: the alias is translated here, at the adapter boundary; both may be
// given only if they agree); explanation is a non-blank string; nextAction,
// when given, is a non-blank string; the category agrees with
// retryability (only transient may be retryable); and content carries the
// serialized contract: at least one text block whose text is a JSON object,
// and every such block is a valid contract saying the same as
// structuredContent (compared after the alias is translated). Text blocks
// that do not start with "{" are prose for people and are not read.
//
// Selection, the same in both modes (the contract declares no policy label,
// so explicit-action has nothing more to follow; Mode is recorded):
// transient and retryable → retry_later; transient and not retryable → stop
// (NotRetryable); validation → revise_arguments; permission → authenticate;
// business → stop (BusinessRule).
//
// Note: a retryable transient failure maps to retry_later, not retry_now:
// isRetryable means the unchanged call is eligible for a bounded retry,
// and the contract carries no delay, so the caller's own backoff (and
// retry budget) applies; Decision.Delay is 0. The unchanged-request rule
// of Decide is met by the contract's own terms: isRetryable true is the
// server's statement that the same operation may run again.
//
// Note: nextAction is free text and is only type-checked; the client
// never reads an action from it, so it cannot smuggle a policy past the
// category and retryability checks.
//
// Note: the members of the outer result other than resultType, content,
// isError and structuredContent are ignored, including a section 6 error
// envelope: a caller that wants that contract calls Decide.
func DecideCategory(raw []byte, mode Mode) Decision {
	d, res, done := start(raw, mode)
	if done {
		return d
	}
	stop := d.stop

	// The structured contract.
	sv, ok := res["structuredContent"]
	if !ok {
		return stop(MissingStructuredContent, "isError is true but structuredContent is absent")
	}
	sc, ok := sv.(map[string]any)
	if !ok {
		return stop(InvalidStructuredContent, "structuredContent is %s, not an object", kind(sv))
	}
	c, r, msg := readContract(sc, "structuredContent")
	if r != "" {
		return stop(r, "%s", msg)
	}
	d.Category = c.category
	if c.retryable && c.category != study.TransientCategory {
		return stop(ContradictoryRetryable, "structuredContent declares a %s failure retryable; only transient failures may be", c.category)
	}

	// The text copy.
	copies := 0
	for i, b := range res["content"].([]any) {
		blk := b.(map[string]any) // completedError checked every block
		if blk["type"] != "text" {
			continue
		}
		text := blk["text"].(string)
		if !strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), "{") {
			continue
		}
		copies++
		v, r, msg := parse([]byte(text))
		if r != "" {
			return stop(TextCopyMismatch, "content[%d] text is not a JSON copy of structuredContent: %s", i, msg)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return stop(TextCopyMismatch, "content[%d] text is %s, not a copy of structuredContent", i, kind(v))
		}
		tc, r, msg := readContract(m, fmt.Sprintf("content[%d] text", i))
		if r != "" {
			return stop(TextCopyMismatch, "%s (%s)", msg, r)
		}
		if m := differ(tc, c); m != "" {
			return stop(TextCopyMismatch, "content[%d] text and structuredContent disagree on %s", i, m)
		}
	}
	if copies == 0 {
		return stop(MissingTextCopy, "no text block of content holds the serialized contract")
	}

	// Selection.
	switch c.category {
	case study.TransientCategory:
		if !c.retryable {
			return stop(NotRetryable, "the failure is transient but the unchanged call is declared not retryable")
		}
		d.Policy = study.RetryLater
	case study.ValidationCategory:
		d.Policy = study.ReviseArguments
	case study.PermissionCategory:
		d.Policy = study.Authenticate
	case study.BusinessCategory:
		return stop(BusinessRule, "a business rule forbids the operation")
	}
	d.Reason, d.Message = "", ""
	return d
}

// readContract checks the members of one copy of the contract (where names
// it in messages) and returns it normalized, or a Reason and a message.
func readContract(m map[string]any, where string) (contract, Reason, string) {
	var c contract
	if k := firstUnknown(m, categoryMembers); k != "" {
		return c, UnknownMember, fmt.Sprintf("%s.%s is not a member of the error-category contract", where, k)
	}
	cat, _ := m["errorCategory"].(string)
	c.category = study.ErrorCategory(cat)
	if !c.category.Valid() {
		return c, UnknownCategory, fmt.Sprintf("%s.errorCategory is %s, want transient, validation, permission or business", where, show(m, "errorCategory"))
	}
	given := 0
	for _, k := range []string{"isRetryable", "retriable"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		b, ok := v.(bool)
		if !ok {
			return c, InvalidRetryable, fmt.Sprintf("%s.%s is %s, not a boolean", where, k, show(m, k))
		}
		if given > 0 && b != c.retryable {
			return c, RetryableConflict, fmt.Sprintf("%s.isRetryable is %t but its alias retriable is %t", where, c.retryable, b)
		}
		c.retryable = b
		given++
	}
	if given == 0 {
		return c, InvalidRetryable, fmt.Sprintf("%s has neither isRetryable nor retriable", where)
	}
	c.explanation, _ = m["explanation"].(string)
	if strings.TrimSpace(c.explanation) == "" {
		return c, MissingExplanation, fmt.Sprintf("%s.explanation is %s, not a non-blank string", where, show(m, "explanation"))
	}
	if v, ok := m["nextAction"]; ok {
		s, _ := v.(string)
		if strings.TrimSpace(s) == "" {
			return c, InvalidNextAction, fmt.Sprintf("%s.nextAction is %s, not a non-blank string", where, show(m, "nextAction"))
		}
		c.nextAction, c.hasNext = s, true
	}
	return c, "", ""
}

// differ names the first member on which copies a and b disagree, or "".
func differ(a, b contract) string {
	switch {
	case a.category != b.category:
		return fmt.Sprintf("errorCategory (%s, %s)", a.category, b.category)
	case a.retryable != b.retryable:
		return fmt.Sprintf("retryability (%t, %t)", a.retryable, b.retryable)
	case a.explanation != b.explanation:
		return "explanation"
	case a.hasNext != b.hasNext || a.nextAction != b.nextAction:
		return "nextAction"
	}
	return ""
}
