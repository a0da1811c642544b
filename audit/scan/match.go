package scan

import (
	"bytes"
	"slices"
	"strings"
)

// The constructs a match is one of.
const (
	// property is an object, dict, struct or composite literal member:
	// {isError: true}, {"isError": True}, CallToolResult{IsError: true},
	// CallToolResult { is_error: Some(true), … }.
	property = "property"
	// namedArgument is a keyword or named argument of a call:
	// CallToolResult(isError=True) (Python, Kotlin), new
	// CallToolResult(isError: true) (C#).
	namedArgument = "named_argument"
	// initializer is a C# object initializer member: new CallToolResult {
	// IsError = true }.
	initializer = "initializer"
	// assignment sets the field on an object: result.isError = true.
	assignment = "assignment"
	// indexAssignment sets it by key: result["isError"] = True.
	indexAssignment = "index_assignment"
	// helper is a call of an SDK helper that builds an error result, in a
	// file that imports that SDK: (*CallToolResult).SetError (Go SDK,
	// github.com/modelcontextprotocol/go-sdk/mcp; counted only in files
	// that also name CallToolResult, for SetError is a common method
	// name), NewToolResultError, …Errorf, …ErrorFromErr qualified by the
	// name mcp-go (github.com/mark3labs/mcp-go/mcp) is imported as, or
	// unqualified after a dot import, and CallToolResult::error (Rust
	// SDK, in a file that names the rmcp crate).
	helper = "helper"
	// builder is a builder call: CallToolResult.builder().isError(true)
	// (Java SDK).
	builder = "builder"
	// WrapperCall is not a match: a call of a function named like an SDK
	// helper in a file that does not import that SDK, or qualified by
	// another package (utils.NewToolResultError): a repository's own
	// wrapper, whose definition is the construction (its IsError: true,
	// or its call of the SDK's helper, matches). Its call sites are
	// listed apart (Result.WrapperCalls), never in the ledger.
	WrapperCall = "wrapper_call"
)

// keys are the names of the error flag.
var keys = []string{"isError", "is_error", "IsError"}

// rules are the constructs a language has, and how it writes true.
type rules struct {
	truth         []string // true, True; JavaScript minifiers write !0
	rustSome      bool     // Some(true)
	property      bool
	namedArgEq    bool // name=value
	namedArgColon bool // name: value
	initializer   bool
	goHelpers     bool // Go: .SetError(, NewToolResultError…(
	rustError     bool // Rust: CallToolResult::error(
	javaBuilder   bool // Java: .isError(true)
	typeScript    bool // interface and type bodies are types, not values
}

var languageRules = map[Language]rules{
	TypeScript: {truth: []string{"true", "!0"}, property: true, typeScript: true},
	JavaScript: {truth: []string{"true", "!0"}, property: true},
	Python:     {truth: []string{"True"}, property: true, namedArgEq: true},
	Go:         {truth: []string{"true"}, property: true, goHelpers: true},
	Rust:       {truth: []string{"true"}, rustSome: true, property: true, rustError: true},
	Java:       {truth: []string{"true"}, javaBuilder: true},
	Kotlin:     {truth: []string{"true"}, namedArgEq: true},
	CSharp:     {truth: []string{"true"}, namedArgColon: true, initializer: true},
}

// hit is one match in a file.
type hit struct {
	tok       int    // the token reported: the key or the helper's name
	construct string // property, …
	key       string // isError, is_error, IsError, or the helper's name
	match     string // the construct written out: isError: true, .SetError(…)
	function  string // the enclosing function, "" when unknown
}

// frame is an open bracket while matching.
type frame struct {
	tok    int
	c      byte   // ( [ {
	typ    bool   // a TypeScript type body
	params bool   // a parameter list
	name   string // the function a { opens the body of
}

// matcher finds the matches among a file's tokens.
type matcher struct {
	src  []byte
	toks []token
	lang Language
	r    rules
	pair []int32 // the index of the matching bracket, -1 for none
	open []frame
	// defs is Python's stack of enclosing defs with their indentation.
	defs []pyDef
	// alias is the depth of an open TypeScript type alias, -1 for none;
	// aliasAt is the index of its "=".
	alias, aliasAt int
	// typeNext says the next { opens a type body (after interface X,
	// declare module, as, satisfies).
	typeNext bool
	// mcpFile says the file names CallToolResult.
	mcpFile bool
	// sdk is what the file imports of the SDKs whose helpers match.
	sdk imports
	// patternEnd is the index of the : that ends a Python case clause's
	// header; tokens before it are a pattern (and guard), not values.
	patternEnd int
	hits       []hit
}

// imports is what a file imports of the SDKs with error helpers.
type imports struct {
	// mcpGo are the names mcp-go's mcp package is imported as; mcpGoDot
	// says it is dot-imported.
	mcpGo    []string
	mcpGoDot bool
	// goSDK says the Go SDK's mcp package is imported.
	goSDK bool
	// rmcp says a Rust file names the rmcp crate (use rmcp::…,
	// rmcp::model::CallToolResult, extern crate rmcp).
	rmcp bool
}

type pyDef struct {
	indent int32
	name   string
}

// text is token i's bytes as a string.
func (m *matcher) text(i int) string {
	t := m.toks[i]
	return string(m.src[t.s:t.e])
}

// is reports whether token i exists and is s (an identifier, number or
// punctuation).
func (m *matcher) is(i int, s string) bool {
	if i < 0 || i >= len(m.toks) {
		return false
	}
	t := m.toks[i]
	return t.kind != kString && int(t.e-t.s) == len(s) && string(m.src[t.s:t.e]) == s
}

// key returns the key token i names (an identifier, or for strings=true a
// string whose contents are exactly the key), "" for none.
func (m *matcher) key(i int, strings bool) string {
	if i < 0 || i >= len(m.toks) {
		return ""
	}
	t := m.toks[i]
	var b []byte
	switch {
	case t.kind == kIdent:
		b = m.src[t.s:t.e]
	case t.kind == kString && strings:
		cs, ce := t.contents()
		b = m.src[cs:ce]
	default:
		return ""
	}
	for _, k := range keys {
		if string(b) == k {
			return k
		}
	}
	return ""
}

// value returns the index after the literal true starting at token i, or
// -1 when there is none, with the value as written.
func (m *matcher) value(i int) (int, string) {
	for _, t := range m.r.truth {
		if t == "!0" {
			if m.is(i, "!") && m.is(i+1, "0") && m.toks[i+1].s == m.toks[i].e {
				return i + 2, "!0"
			}
			continue
		}
		if m.is(i, t) {
			return i + 1, t
		}
	}
	if m.r.rustSome && m.is(i, "Some") && m.is(i+1, "(") && m.is(i+2, "true") && m.is(i+3, ")") {
		return i + 4, "Some(true)"
	}
	return -1, ""
}

// endsStatement reports whether token i ends the statement before it: the
// end of the file, ; } ) or a token on a new line.
func (m *matcher) endsStatement(i int) bool {
	if i >= len(m.toks) {
		return true
	}
	return m.toks[i].nl || m.is(i, ";") || m.is(i, "}") || m.is(i, ")")
}

// inner returns the innermost open bracket, nil at the top level.
func (m *matcher) inner() *frame {
	if len(m.open) == 0 {
		return nil
	}
	return &m.open[len(m.open)-1]
}

// inType reports whether the current position is inside a TypeScript
// type (an interface or type alias body).
func (m *matcher) inType() bool {
	if m.alias >= 0 {
		return true
	}
	f := m.inner()
	return f != nil && f.typ
}

// findMatches returns the matches among the tokens of src in language
// lang: the constructs (constructs) that set the error flag to the
// literal true, or call an SDK helper, outside TypeScript types.
func findMatches(src []byte, toks []token, lang Language) []hit {
	m := &matcher{src: src, toks: toks, lang: lang, r: languageRules[lang], alias: -1,
		mcpFile: bytes.Contains(src, []byte("CallToolResult"))}
	m.pairs()
	switch lang {
	case Go:
		m.sdk = m.goImports()
	case Rust:
		m.sdk = m.rustImports()
	}
	for i := range toks {
		m.track(i)
		if !m.inType() && i >= m.patternEnd {
			m.check(i)
		}
	}
	return m.hits
}

// caseHeader returns the index of the : that ends the Python case clause
// whose case keyword is token i, first on its logical line, or 0 when it
// is not one: case followed by a pattern (not =, ., :, ( or an operator
// that makes case a name) and a : outside brackets before the line ends.
func (m *matcher) caseHeader(i int) int {
	if i+1 >= len(m.toks) || m.toks[i+1].nl {
		return 0
	}
	for _, s := range []string{"=", ".", ":", "(", ",", ")", "]", "}", ";", "+=", "-=", "*=", "/=", "|=", "&="} {
		if m.is(i+1, s) {
			return 0
		}
	}
	for k := i + 1; k < len(m.toks); k++ {
		t := m.toks[k]
		if t.nl {
			return 0
		}
		if m.is(k, ":") {
			return k
		}
		if t.kind == kPunct && t.e-t.s == 1 {
			switch m.src[t.s] {
			case '(', '[', '{':
				p := int(m.pair[k])
				if p < k {
					return 0
				}
				k = p
			}
		}
	}
	return 0
}

// mcpGoPath and goSDKPath are the import paths of the Go packages whose
// helpers match (a major-version suffix allowed).
const (
	mcpGoPath = "github.com/mark3labs/mcp-go"
	goSDKPath = "github.com/modelcontextprotocol/go-sdk"
)

// isPackage reports whether path is module's package pkg: module, an
// optional /vN, then /pkg.
func isPackage(path, module, pkg string) bool {
	rest, ok := strings.CutPrefix(path, module)
	if !ok {
		return false
	}
	if v, after, found := strings.Cut(strings.TrimPrefix(rest, "/"), "/"); found && len(v) > 1 && v[0] == 'v' && strings.Trim(v[1:], "0123456789") == "" {
		rest = "/" + after
	}
	return rest == "/"+pkg
}

// goImports reads a Go file's import declarations (before its first
// func, type, var or const) for the SDKs with error helpers.
func (m *matcher) goImports() imports {
	var im imports
	for i := 0; i < len(m.toks); i++ {
		t := m.toks[i]
		if t.kind != kIdent || !t.nl {
			continue
		}
		switch m.text(i) {
		case "func", "type", "var", "const":
			return im
		case "import":
		default:
			continue
		}
		end := i + 2
		if m.is(i+1, "(") {
			end = int(m.pair[i+1])
			if end < 0 {
				end = len(m.toks)
			}
		} else if i+2 < len(m.toks) && m.toks[i+1].kind != kString {
			end = i + 3
		}
		for k := i + 1; k < end && k < len(m.toks); k++ {
			if m.toks[k].kind != kString {
				continue
			}
			path := strings.Trim(m.text(k), "\"`")
			name := ""
			if p := k - 1; p > i && (m.toks[p].kind == kIdent || m.is(p, ".")) && m.toks[p].line == m.toks[k].line {
				name = m.text(p)
			}
			switch {
			case isPackage(path, mcpGoPath, "mcp"):
				switch name {
				case "":
					im.mcpGo = append(im.mcpGo, "mcp")
				case ".":
					im.mcpGoDot = true
				case "_":
				default:
					im.mcpGo = append(im.mcpGo, name)
				}
			case isPackage(path, goSDKPath, "mcp") && name != "_":
				im.goSDK = true
			}
		}
		i = end
	}
	return im
}

// rustImports reports whether a Rust file names the rmcp crate: rmcp
// followed by ::, or extern crate rmcp.
func (m *matcher) rustImports() imports {
	for i := range m.toks {
		if m.is(i, "rmcp") && !m.is(i-1, ".") && (m.is(i+1, "::") || m.is(i-1, "crate") && m.is(i-2, "extern")) {
			return imports{rmcp: true}
		}
	}
	return imports{}
}

// pairs matches the brackets of the file, recovering from unbalanced
// ones: a closer matches the nearest open bracket of its kind, and the
// brackets opened after that one stay unmatched.
func (m *matcher) pairs() {
	m.pair = make([]int32, len(m.toks))
	var stack []int
	for i, t := range m.toks {
		m.pair[i] = -1
		if t.kind != kPunct || t.e-t.s != 1 {
			continue
		}
		switch c := m.src[t.s]; c {
		case '(', '[', '{':
			stack = append(stack, i)
		case ')', ']', '}':
			open := "([{"[strings.IndexByte(")]}", c)]
			// Note: the search is bounded, so that a file of unbalanced
			// brackets stays linear.
			for j := len(stack) - 1; j >= 0 && j >= len(stack)-64; j-- {
				if m.src[m.toks[stack[j]].s] == open {
					m.pair[i], m.pair[stack[j]] = int32(stack[j]), int32(i)
					stack = stack[:j]
					break
				}
			}
		}
	}
}

// track keeps the open brackets, the enclosing function and the
// TypeScript type context up to date for token i.
func (m *matcher) track(i int) {
	t := m.toks[i]
	if m.lang == Python && t.nl && len(m.open) == 0 {
		// A logical line: defs indented as much or more have ended.
		indent := t.s - lineStart(m.src, t.s)
		for len(m.defs) > 0 && m.defs[len(m.defs)-1].indent >= indent {
			m.defs = m.defs[:len(m.defs)-1]
		}
	}
	if m.r.typeScript {
		m.trackTypes(i)
	}
	if m.lang == Python && t.nl && len(m.open) == 0 && m.is(i, "case") {
		if end := m.caseHeader(i); end > 0 {
			m.patternEnd = end
		}
	}
	if t.kind == kIdent && m.lang == Python && m.is(i, "def") && i+1 < len(m.toks) && m.toks[i+1].kind == kIdent {
		indent := t.s - lineStart(m.src, t.s)
		if !t.nl && i > 0 && m.is(i-1, "async") {
			indent = m.toks[i-1].s - lineStart(m.src, m.toks[i-1].s)
		}
		m.defs = append(m.defs, pyDef{indent: indent, name: m.text(i + 1)})
	}
	if t.kind != kPunct || t.e-t.s != 1 {
		return
	}
	switch c := m.src[t.s]; c {
	case '(', '[', '{':
		f := frame{tok: i, c: c}
		if outer := m.inner(); outer != nil && outer.typ {
			f.typ = true
		}
		switch c {
		case '{':
			if m.alias >= 0 || m.typeNext {
				f.typ = true
				m.typeNext = false
			}
			if m.lang != Python {
				f.name = m.blockName(i)
			}
		case '(':
			f.params = m.isParams(i)
		}
		m.open = append(m.open, f)
	case ')', ']', '}':
		if p := m.pair[i]; p >= 0 {
			for len(m.open) > 0 {
				top := m.open[len(m.open)-1].tok
				m.open = m.open[:len(m.open)-1]
				if top == int(p) {
					break
				}
			}
		}
	}
}

// trackTypes follows TypeScript's type declarations: interface bodies,
// type aliases (from "type X =" to the end of the statement), declare
// module/global/namespace blocks, and object types after as and
// satisfies.
func (m *matcher) trackTypes(i int) {
	t := m.toks[i]
	depth := len(m.open)
	if m.alias >= 0 && depth <= m.alias && i > m.aliasAt+1 {
		switch {
		case m.is(i, ";"), depth < m.alias:
			m.alias = -1
		case t.nl && !m.continuesType(i):
			m.alias = -1
		}
	}
	if t.kind != kIdent || m.is(i-1, ".") {
		if m.is(i, ";") {
			m.typeNext = false
		}
		return
	}
	switch string(m.src[t.s:t.e]) {
	case "type":
		if i+2 < len(m.toks) && m.toks[i+1].kind == kIdent && (m.is(i+2, "=") || m.is(i+2, "<")) && m.alias < 0 {
			// Find the = after optional type parameters.
			j := i + 2
			if m.is(j, "<") {
				for j < len(m.toks) && j < i+200 && !m.is(j, "=") {
					j++
				}
			}
			m.alias, m.aliasAt = depth, j
		}
	case "interface":
		if i+1 < len(m.toks) && m.toks[i+1].kind == kIdent {
			m.typeNext = true
		}
	case "declare":
		if m.is(i+1, "module") || m.is(i+1, "global") || m.is(i+1, "namespace") {
			m.typeNext = true
		}
	case "as", "satisfies":
		if m.is(i+1, "{") {
			m.typeNext = true
		}
	}
}

// continuesType reports whether token i, first on its line, continues
// the type alias before it: a union or intersection goes on, or the line
// before ended with an operator.
func (m *matcher) continuesType(i int) bool {
	for _, s := range []string{"|", "&", "?", ":", "extends"} {
		if m.is(i, s) {
			return true
		}
	}
	for _, s := range []string{"=", "|", "&", ",", "<", "(", ":", "=>", "?", "extends"} {
		if m.is(i-1, s) {
			return true
		}
	}
	return false
}

// isParams reports whether the ( at i opens a function's parameter list
// (def f(, fun f(, fn f(, func f(, function f(, lambda), where name=true
// is a default value, not an argument.
func (m *matcher) isParams(i int) bool {
	if i >= 2 && m.toks[i-1].kind == kIdent && (m.is(i-2, "def") || m.in(i-2, functionWords)) {
		return true
	}
	return m.is(i-1, "function") || m.is(i-1, "lambda")
}

// controlWords are the keywords a ( … ) { of a block may follow that is
// not a function's body.
var controlWords = wordSet("if", "for", "while", "switch", "catch", "with", "else", "do", "try", "using", "lock",
	"foreach", "match", "when", "synchronized", "return", "await", "yield", "typeof", "sizeof", "new", "super",
	"this", "elif", "except", "loop", "unless", "until", "select", "defer", "go", "fixed", "checked", "unchecked")

// stopWords end the walk back over a return type: a { after them is not
// a function's body.
var stopWords = wordSet("class", "interface", "struct", "enum", "impl", "object", "trait", "namespace", "module",
	"record", "type", "extends", "implements", "package", "import", "var", "let", "const", "val")

// typeWalk is the punctuation a return type may hold.
var typeWalk = wordSet(":", ".", "<", ">", ",", "[", "]", "|", "&", "?", "->", "*", "::", "'", ">>")

func wordSet(words ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range words {
		m[w] = true
	}
	return m
}

// in reports whether token k is a word of set; it does not allocate.
func (m *matcher) in(k int, set map[string]bool) bool {
	t := m.toks[k]
	return set[string(m.src[t.s:t.e])]
}

// blockName returns the name of the function whose body the { at i opens,
// "" when it opens something else (or an anonymous function not
// assigned to a name). It reads the tokens before: name(params) {,
// name(params): Type {, name(params) -> Type {, func (r T) name(params)
// (results) {, function name(params) {, name = (params) => {, name:
// async x => {.
func (m *matcher) blockName(i int) string {
	j := i - 1
	if j < 0 {
		return ""
	}
	if m.is(j, "=>") {
		return m.arrowName(j)
	}
	// Walk back over a return type, on the line of the token before {,
	// which is the line of the { itself but in Java and C# (whose braces
	// may stand on a line of their own).
	line := m.toks[j].line
	if line != m.toks[i].line && m.lang != Java && m.lang != CSharp {
		return ""
	}
	k := j
	for steps := 0; ; steps++ {
		if k < 0 || steps > 32 || m.toks[k].line != line {
			return ""
		}
		t := m.toks[k]
		if m.is(k, ")") {
			break
		}
		switch t.kind {
		case kIdent:
			if m.in(k, stopWords) || m.in(k, controlWords) {
				return ""
			}
		case kPunct:
			if !m.in(k, typeWalk) {
				return ""
			}
		default:
			return ""
		}
		k--
	}
	open := int(m.pair[k])
	if open < 1 {
		return ""
	}
	if m.lang == Go && m.is(open-1, ")") && m.pair[open-1] >= 1 {
		open = int(m.pair[open-1]) // func f(params) (results) {
	}
	n := open - 1
	if m.toks[n].kind != kIdent {
		return ""
	}
	switch {
	case m.in(n, functionWords):
		return m.assignedName(n - 1)
	case m.in(n, controlWords) || m.in(n, stopWords):
		return ""
	case !m.declares(n - 1):
		return "" // a call in a condition (if x.f() {), new Foo(…) { … }
	}
	return m.text(n)
}

// declarers is the punctuation declares accepts.
var declarers = wordSet(")", ">", "]", "}", "{", ";", ",", "*")

// functionWords introduce functions.
var functionWords = wordSet("function", "func", "fn", "fun")

// declares reports whether token k can stand before the name of a
// function being declared: nothing, a keyword or type other than the
// control words, the ) of a Go receiver, the > or ] of a return type, or
// punctuation that ends a statement or member.
func (m *matcher) declares(k int) bool {
	if k < 0 || m.toks[k+1].nl {
		return true
	}
	t := m.toks[k]
	switch t.kind {
	case kIdent:
		return !m.in(k, controlWords) && !m.is(k, "range") && !m.is(k, "in")
	case kPunct:
		return m.in(k, declarers)
	}
	return false
}

// arrowName returns the name an arrow function whose => is at j is
// assigned to: name = (…) =>, name = async (…): Type =>, name: x =>, ""
// for none.
func (m *matcher) arrowName(j int) string {
	k := j - 1
	// A return type: (…): Type =>, within 16 tokens.
	for r := j - 1; r >= 0 && r > j-16; r-- {
		if m.is(r, ")") && m.is(r+1, ":") {
			k = r
			break
		}
		if m.is(r, "=") || m.is(r, ";") || m.is(r, "{") || m.is(r, "}") || m.is(r, "=>") {
			break
		}
	}
	switch {
	case m.is(k, ")") && m.pair[k] >= 0:
		k = int(m.pair[k]) - 1
	case k >= 0 && m.toks[k].kind == kIdent:
		k-- // a single parameter
	default:
		return ""
	}
	if m.is(k, "async") {
		k--
	}
	return m.assignedName(k)
}

// assignedName returns the name before the = or : at k, "" for none.
func (m *matcher) assignedName(k int) string {
	if (m.is(k, "=") || m.is(k, ":") || m.is(k, ":=")) && k >= 1 && m.toks[k-1].kind == kIdent {
		return m.text(k - 1)
	}
	return ""
}

// function returns the function enclosing the current position.
func (m *matcher) function() string {
	if m.lang == Python {
		if len(m.defs) > 0 {
			return m.defs[len(m.defs)-1].name
		}
		return ""
	}
	for j := len(m.open) - 1; j >= 0; j-- {
		if m.open[j].name != "" {
			return m.open[j].name
		}
	}
	return ""
}

// check records the match token i starts, if any.
func (m *matcher) check(i int) {
	t := m.toks[i]
	if t.kind != kIdent && t.kind != kString {
		return
	}
	r := m.r
	if k := m.key(i, true); k != "" {
		f := m.inner()
		// The token before: one of these, or something else.
		prev := ""
		for _, p := range []string{"{", ",", "(", "."} {
			if m.is(i-1, p) {
				prev = p
			}
		}
		keyText := k
		if t.kind == kString {
			keyText = string(m.src[t.s:t.e])
		}
		// name: value and name = value, in literals and argument lists.
		for _, op := range []string{":", "="} {
			if !m.is(i+1, op) {
				continue
			}
			end, v := m.value(i + 2)
			if end < 0 {
				continue
			}
			switch {
			case op == ":" && r.property && f != nil && f.c == '{' && (prev == "{" || prev == ",") &&
				(m.is(end, ",") || m.is(end, "}") || r.typeScript && (m.is(end, "as") || m.is(end, "satisfies"))):
				m.add(i, property, k, keyText+": "+v)
			case op == "=" && r.namedArgEq && t.kind == kIdent && f != nil && f.c == '(' && !f.params &&
				(prev == "(" || prev == ",") && (m.is(end, ",") || m.is(end, ")")):
				m.add(i, namedArgument, k, k+"="+v)
			case op == ":" && r.namedArgColon && t.kind == kIdent && f != nil && f.c == '(' && !f.params &&
				(prev == "(" || prev == ",") && (m.is(end, ",") || m.is(end, ")")):
				m.add(i, namedArgument, k, k+": "+v)
			case op == "=" && r.initializer && t.kind == kIdent && f != nil && f.c == '{' &&
				(prev == "{" || prev == ",") && (m.is(end, ",") || m.is(end, "}")):
				m.add(i, initializer, k, k+" = "+v)
			case op == "=" && t.kind == kIdent && prev == "." && m.receiver(i-2) && m.endsStatement(end):
				m.add(i, assignment, k, "."+k+" = "+v)
			}
		}
		// object["isError"] = true
		if t.kind == kString && m.is(i-1, "[") && m.receiver(i-2) && m.is(i+1, "]") && m.is(i+2, "=") {
			if end, v := m.value(i + 3); end >= 0 && m.endsStatement(end) {
				m.add(i, indexAssignment, k, "["+keyText+"] = "+v)
			}
		}
		// CallToolResult.builder().isError(true)
		if r.javaBuilder && k == "isError" && t.kind == kIdent && m.is(i-1, ".") && m.is(i+1, "(") && m.is(i+2, "true") && m.is(i+3, ")") {
			m.add(i, builder, k, ".isError(true)")
		}
		return
	}
	if t.kind != kIdent {
		return
	}
	switch {
	case r.goHelpers && m.is(i, "SetError") && m.is(i-1, ".") && m.is(i+1, "(") && m.mcpFile:
		m.add(i, helperOr(m.sdk.goSDK), "SetError", ".SetError(…)")
	case r.goHelpers && m.is(i+1, "(") && m.in(i, toolResultErrors) && !m.goDefinition(i):
		name := m.text(i)
		qual := ""
		if m.is(i-1, ".") && i >= 2 && m.toks[i-2].kind == kIdent && !m.is(i-3, ".") {
			qual = m.text(i - 2)
		} else if m.is(i-1, ".") {
			qual = "…"
		}
		sdk := qual == "" && m.sdk.mcpGoDot || qual != "" && slices.Contains(m.sdk.mcpGo, qual)
		match := name + "(…)"
		if qual != "" && !sdk {
			match = qual + "." + match
		}
		m.add(i, helperOr(sdk), name, match)
	case r.rustError && m.is(i, "CallToolResult") && m.is(i+1, "::") && m.is(i+2, "error") && m.is(i+3, "("):
		m.add(i, helperOr(m.sdk.rmcp), "CallToolResult::error", "CallToolResult::error(…)")
	}
}

// helperOr returns Helper for a call that resolves to the SDK, else
// WrapperCall.
func helperOr(sdk bool) string {
	if sdk {
		return helper
	}
	return WrapperCall
}

// goDefinition reports whether the name at token i is being declared:
// func Name( or func (recv) Name(.
func (m *matcher) goDefinition(i int) bool {
	return m.is(i-1, "func") || m.is(i-1, ")") && m.is(int(m.pair[i-1])-1, "func")
}

// toolResultErrors are mcp-go's helpers that build an error result.
var toolResultErrors = wordSet("NewToolResultError", "NewToolResultErrorf", "NewToolResultErrorFromErr")

// receiver reports whether token j can end the object a field is set on:
// a name, a call, an index or this/self.
func (m *matcher) receiver(j int) bool {
	if j < 0 {
		return false
	}
	return m.toks[j].kind == kIdent || m.is(j, ")") || m.is(j, "]")
}

func (m *matcher) add(i int, construct, key, match string) {
	m.hits = append(m.hits, hit{tok: i, construct: construct, key: key, match: match, function: m.function()})
}

// prefilterWindow is how far after a key prefilter looks for a true.
const prefilterWindow = 256

// prefilter reports whether src may hold a match: a key followed, within
// prefilterWindow bytes, by true, True or !0, or a helper's name. The
// scanner lexes only the files it passes. (A match needs its value right
// after the key; only a comment of more than 200 bytes between them would
// hide one.)
func prefilter(src []byte) bool {
	for _, k := range keyNeedles {
		rest := src
		for {
			i := bytes.Index(rest, k)
			if i < 0 {
				break
			}
			rest = rest[i+len(k):]
			w := rest[:min(len(rest), prefilterWindow)]
			if bytes.Contains(w, []byte("true")) || bytes.Contains(w, []byte("True")) || bytes.Contains(w, []byte("!0")) {
				return true
			}
		}
	}
	return bytes.Contains(src, []byte("SetError")) || bytes.Contains(src, []byte("CallToolResult::error")) ||
		bytes.Contains(src, []byte("NewToolResultError"))
}

var keyNeedles = [][]byte{[]byte("isError"), []byte("is_error"), []byte("IsError")}
