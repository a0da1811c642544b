package proxy

import (
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ServerGone begins the message of the JSON-RPC error the proxy answers
// a request with when the server's connection has ended (the server
// died or closed its output) before it answered: an environment reads
// it as a failure of the environment, not of the call.
const ServerGone = "stress proxy: the server's connection"

// IsServerGone reports whether err is the proxy's answer to a request
// the server's ended connection left unanswered (ServerGone).
func IsServerGone(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc) && strings.HasPrefix(rpc.Message, ServerGone)
}
