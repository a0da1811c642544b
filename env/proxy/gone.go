package proxy

// ServerGone begins the message of the JSON-RPC error the proxy answers
// a request with when the server's connection has ended (the server
// died or closed its output) before it answered: an environment reads
// it as a failure of the environment, not of the call.
const ServerGone = "stress proxy: the server's connection"
