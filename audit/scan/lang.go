package scan

import (
	"path"
	"strings"
)

// Language is a source language the scanner reads.
type Language string

// The languages, by file extension: TypeScript (.ts .tsx .mts .cts),
// JavaScript (.js .jsx .mjs .cjs), Python (.py .pyi), Go (.go), Rust
// (.rs), Java (.java), Kotlin (.kt .kts) and C# (.cs): the languages of
// the official MCP SDKs.
const (
	TypeScript Language = "typescript"
	JavaScript Language = "javascript"
	Python     Language = "python"
	Go         Language = "go"
	Rust       Language = "rust"
	Java       Language = "java"
	Kotlin     Language = "kotlin"
	CSharp     Language = "csharp"
)

// languages lists the languages in the order of every table.
var languages = []Language{TypeScript, JavaScript, Python, Go, Rust, Java, Kotlin, CSharp}

var extensions = map[string]Language{
	".ts": TypeScript, ".tsx": TypeScript, ".mts": TypeScript, ".cts": TypeScript,
	".js": JavaScript, ".jsx": JavaScript, ".mjs": JavaScript, ".cjs": JavaScript,
	".py": Python, ".pyi": Python,
	".go":   Go,
	".rs":   Rust,
	".java": Java,
	".kt":   Kotlin, ".kts": Kotlin,
	".cs": CSharp,
}

// languageOf returns the language of a file by its name's extension, ""
// for a file the scanner does not read.
func languageOf(name string) Language {
	return extensions[strings.ToLower(path.Ext(name))]
}

// declarations reports whether a file holds only declarations (.d.ts,
// .d.mts, .d.cts, .pyi): it is counted, but nothing in it is a match,
// for a type (isError: true as a literal type) is not a result.
func declarations(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".d.ts") || strings.HasSuffix(n, ".d.mts") || strings.HasSuffix(n, ".d.cts") || strings.HasSuffix(n, ".pyi")
}

// syntax is what the lexer must know of a language's comments and
// literals.
type syntax struct {
	hashComments  bool // # to the end of the line (Python)
	slashComments bool // // and /* */
	nestedBlocks  bool // /* /* */ */ nests (Rust, Kotlin)
	charQuotes    bool // ' starts a character literal (or a Rust lifetime), not a string
	backtickRaw   bool // `raw string` (Go)
	templates     bool // `template ${code}` (JavaScript, TypeScript)
	regexps       bool // /regexp/ literals (JavaScript, TypeScript)
	tripleQuotes  bool // """ (and, in Python, ''') strings span lines
	pyPrefixes    bool // r b u f prefixes before a quote (Python)
	rustRaw       bool // r"…", r#"…"#, b"…" (Rust)
	csPrefixes    bool // @"verbatim" and $"interpolated" (C#)
}

var syntaxes = map[Language]syntax{
	TypeScript: {slashComments: true, templates: true, regexps: true},
	JavaScript: {slashComments: true, templates: true, regexps: true},
	Python:     {hashComments: true, tripleQuotes: true, pyPrefixes: true},
	Go:         {slashComments: true, charQuotes: true, backtickRaw: true},
	Rust:       {slashComments: true, nestedBlocks: true, charQuotes: true, rustRaw: true},
	Java:       {slashComments: true, charQuotes: true, tripleQuotes: true},
	Kotlin:     {slashComments: true, nestedBlocks: true, charQuotes: true, tripleQuotes: true},
	CSharp:     {slashComments: true, charQuotes: true, tripleQuotes: true, csPrefixes: true},
}
