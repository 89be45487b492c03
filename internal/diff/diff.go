// Package diff computes line-based differences between two texts and prints
// them in the unified format of diff -u and git diff.
//
// The differences come from github.com/sergi/go-diff (Google's
// diff-match-patch: Myers' O(ND) algorithm, linear in memory), run over one
// rune per distinct line and without a deadline, so the edit script is a
// shortest one and the output for a small change in a large file stays
// small. This package only turns that script into GNU diff's hunks.
package diff

import (
	"fmt"
	"strings"
)

// op is the kind of one edit: a line kept, removed from the old text, or
// added by the new one.
type op int8

const (
	opEqual op = iota
	opDelete
	opInsert
)

// edit is one line of an edit script. a and b are the 0-based indexes of the
// line in the old and new text; for a delete b is the index of the next new
// line, for an insert a is the index of the next old line.
type edit struct {
	op   op
	a, b int
}

// Unified returns the unified diff that turns old into new, with headers
// "--- oldName" and "+++ newName", hunks "@@ -l,s +l,s @@" and context lines
// of unchanged text around each change (3 is the usual amount). It returns ""
// when the texts are equal. A last line without a newline is marked with
// "\ No newline at end of file", as diff and git do.
func Unified(oldName, newName string, old, new []byte, context int) string {
	if context < 0 {
		context = 0
	}
	a, b := splitLines(string(old)), splitLines(string(new))
	script := lines(a, b)
	var out strings.Builder
	for _, h := range hunks(script, context) {
		if out.Len() == 0 {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
		}
		writeHunk(&out, script[h[0]:h[1]], a, b)
	}
	return out.String()
}

// splitLines splits s after every newline; each line keeps its "\n" except
// possibly the last one. An empty text has no lines.
func splitLines(s string) []string {
	var ls []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			ls = append(ls, s)
			break
		}
		ls = append(ls, s[:i+1])
		s = s[i+1:]
	}
	return ls
}

// hunks groups the changes of script into [start, end) ranges of script,
// each with up to context equal lines before and after. Changes separated by
// at most 2*context equal lines share a hunk.
func hunks(script []edit, context int) [][2]int {
	var hs [][2]int
	for i := 0; i < len(script); {
		if script[i].op == opEqual {
			i++
			continue
		}
		start := max(i-context, 0)
		last := i + 1 // one past the last change of the hunk
		for j := last; j < len(script); j++ {
			if script[j].op != opEqual {
				last = j + 1
			} else if j-last+1 > 2*context {
				break
			}
		}
		end := min(last+context, len(script))
		hs = append(hs, [2]int{start, end})
		i = end
	}
	return hs
}

// writeHunk prints one hunk: its header and its lines.
func writeHunk(out *strings.Builder, h []edit, a, b []string) {
	aStart, bStart := h[0].a, h[0].b
	aCount, bCount := 0, 0
	for _, e := range h {
		switch e.op {
		case opEqual:
			aCount++
			bCount++
		case opDelete:
			aCount++
		case opInsert:
			bCount++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aCount), hunkRange(bStart, bCount))
	for _, e := range h {
		switch e.op {
		case opEqual:
			writeLine(out, ' ', a[e.a])
		case opDelete:
			writeLine(out, '-', a[e.a])
		case opInsert:
			writeLine(out, '+', b[e.b])
		}
	}
}

// hunkRange formats the range of a hunk header from a 0-based start and a
// line count: "l,s", just "l" when s is 1, and for an empty range the line
// before it ("0,0" at the top of the file).
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

// writeLine prints one line with its prefix and marks a missing final newline.
func writeLine(out *strings.Builder, prefix byte, line string) {
	out.WriteByte(prefix)
	out.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		out.WriteString("\n\\ No newline at end of file\n")
	}
}
