// Package testserver holds, in its subpackages, the servers and fakes that
// only tests use, apart from the production utilities of internal/:
// ollamatest (a real Ollama server and a tiny GGUF model written by the
// tests), hostilemcp (a hostile MCP server for capture's tests),
// faultserver (an HTTP server that injects transport faults), echohttp (a
// minimal HTTP model backend), fakeenv (a deterministic environment for
// the tests of live replay), goalaudit (hostile call sequences after a
// recovery) and exectable (execution tables compared cell by cell). No file of the module but a test imports
// them (imports_test.go checks it), so the command never links them.
package testserver
