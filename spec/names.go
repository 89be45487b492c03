package spec

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// initialisms are the words CamelCase writes in upper case, as Go style does
// (user_id -> UserID, not UserId).
var initialisms = map[string]bool{
	"id": true, "url": true, "uri": true, "http": true, "https": true,
	"json": true, "api": true, "ip": true, "tcp": true, "udp": true,
	"uuid": true, "acl": true, "ttl": true, "cpu": true, "dns": true,
	"sql": true, "xml": true, "html": true,
}

// CamelCase converts a snake_case name to an exported Go identifier:
// order_lock -> OrderLock, dark_mode -> DarkMode, user_id -> UserID.
// Each underscore-separated word gets an upper-case first letter (the rest is
// kept as written), and common initialisms (id, url, json, ...) are written
// entirely in upper case. Empty words (a__b, trailing _) are dropped.
func CamelCase(snake string) string {
	var b strings.Builder
	for _, w := range strings.Split(snake, "_") {
		if w == "" {
			continue
		}
		if initialisms[strings.ToLower(w)] {
			b.WriteString(strings.ToUpper(w))
			continue
		}
		r, n := utf8.DecodeRuneInString(w)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(w[n:])
	}
	return b.String()
}

// LowerCamelCase converts a snake_case name to an unexported Go identifier,
// as used for generated parameter names: shard -> shard, user_id -> userID,
// id_map -> idMap. It is CamelCase with the first word in lower case.
func LowerCamelCase(snake string) string {
	words := strings.Split(snake, "_")
	for i, w := range words {
		if w != "" {
			return strings.ToLower(w) + CamelCase(strings.Join(words[i+1:], "_"))
		}
	}
	return ""
}

// snakeRE matches the snake_case names used for resources, fields,
// parameters, priorities and participants.
var snakeRE = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// isSnake reports whether s is a valid snake_case name.
func isSnake(s string) bool { return snakeRE.MatchString(s) }

// typeNameRE matches the names declared under types:.
var typeNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// packageRE matches a lower-case Go package name.
var packageRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// exportedRE matches an exported Go identifier (ASCII only).
var exportedRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*$`)

// goKeywords are the Go keywords.
var goKeywords = setOf("break", "case", "chan", "const", "continue", "default",
	"defer", "else", "fallthrough", "for", "func", "go", "goto", "if",
	"import", "interface", "map", "package", "range", "return", "select",
	"struct", "switch", "type", "var")

// goPredeclared are the identifiers of Go's universe block.
var goPredeclared = setOf("any", "append", "bool", "byte", "cap", "clear",
	"close", "comparable", "complex", "complex64", "complex128", "copy",
	"delete", "error", "false", "float32", "float64", "imag", "int", "int8",
	"int16", "int32", "int64", "iota", "len", "make", "max", "min", "new",
	"nil", "panic", "print", "println", "real", "recover", "rune", "string",
	"true", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr")

// reservedParams are names generated methods use for themselves (receiver,
// context, imported packages), so a path parameter may not take them.
var reservedParams = setOf("c", "ctx", "runtime", "json", "time", "fmt",
	"context", "errors", "strconv")

// identClash says what name is when it cannot be a generated local
// identifier ("a Go keyword"), or "" when it can.
func identClash(name string) string {
	switch {
	case goKeywords[name]:
		return "a Go keyword"
	case goPredeclared[name]:
		return "a predeclared Go identifier"
	case reservedParams[name]:
		return "a name reserved for generated code (c, ctx, runtime, json, time, fmt, context, errors, strconv)"
	}
	return ""
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// suggest returns the candidate closest to got, ignoring case, or "" when
// none is close: within edit distance 2, and 1 for names shorter than 6
// bytes.
func suggest(got string, candidates []string) string {
	limit := 1
	if len(got) >= 6 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(got), strings.ToLower(c), bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// didYouMean formats a suggestion suffix for got, or "" when none is close.
func didYouMean(got string, candidates []string) string {
	if s := suggest(got, candidates); s != "" {
		return "; did you mean " + quote(s) + "?"
	}
	return ""
}

// editDistance is the optimal-string-alignment distance between a and b
// (insertions, deletions, substitutions and swaps of adjacent bytes), or
// some value >= limit when it is at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	// rows[i%3] is row i of the dynamic-programming table.
	var rows [3][]int
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur, prev, prev2 := rows[i%3], rows[(i-1)%3], rows[(i+1)%3]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
	}
	return rows[len(a)%3][len(b)]
}
