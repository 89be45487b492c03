package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in a spec, at a position in the file.
type Error struct {
	File  string // the spec file name as given to Parse
	Pos   Pos    // 1-based line and column of the offending key or value
	Field string // dotted path of the field, e.g. resources.tasks.priorities[2]; may be empty
	Msg   string // lower-case description of the problem and what is allowed
}

// Error formats the problem as "file:line:col: field.path: message", leaving
// out "field.path: " when Field is empty.
func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Pos.Line, e.Pos.Col, e.Field, e.Msg)
}

// Errors is every problem found in a spec, sorted by position. Parse returns
// it as its error; use errors.As to get at the individual problems.
type Errors []*Error

// Error joins the messages of all problems with "\n".
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sortErrors sorts by (line, col, msg, field) and drops exact duplicates,
// which aliases can produce.
func sortErrors(es Errors) Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			strings.Compare(a.Msg, b.Msg),
			strings.Compare(a.Field, b.Field),
		)
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}

// quote quotes a user-supplied string for a message, shortening long ones.
func quote(s string) string {
	const limit = 60
	if len(s) > limit {
		r := []rune(s)
		if len(r) > limit {
			s = string(r[:limit-3]) + "..."
		}
	}
	return strconv.Quote(s)
}

// join appends a key to a field path: join("resources", "jobs") is
// "resources.jobs". Keys that are not plain words are quoted.
func join(parent, key string) string {
	if !plainKey(key) {
		key = quote(key)
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// index appends a list index to a field path: index("acl", 0) is "acl[0]".
func index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

func plainKey(s string) bool {
	if s == "" || len(s) > 60 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
