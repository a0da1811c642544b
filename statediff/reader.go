package statediff

import "context"

// A Reader reads part of a system's state into doc, the JSON document the
// diff reads: objects map[string]any, arrays []any, numbers float64, as
// encoding/json decodes into any. It names in the returned capped what
// it left out at its caps. Readers of one state write disjoint keys of
// doc (package statediff/readers holds the filesystem, memory-file and
// SQL readers).
type Reader interface {
	Read(ctx context.Context, doc map[string]any) (capped []string, err error)
}
