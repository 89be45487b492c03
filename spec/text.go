package spec

import (
	"bytes"
	"sort"
	"unicode/utf8"
)

// text indexes the lines of a spec file so that byte offsets and YAML
// positions (1-based line, column in characters) convert into each other
// the way yaml.v3 counts them: "\r\n", "\r", "\n", U+0085, U+2028 and
// U+2029 end a line, and a leading UTF-8 byte order mark takes no column.
type text struct {
	data   []byte
	starts []int // byte offset of the first byte of each line; starts[0] == 0
	bom    int   // length of a leading UTF-8 byte order mark (0 or 3)
}

func newText(data []byte) *text {
	t := &text{data: data, starts: []int{0}}
	if bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")) {
		t.bom = 3
	}
	for i := 0; i < len(data); {
		if n := breakLen(data[i:]); n > 0 {
			i += n
			t.starts = append(t.starts, i)
			continue
		}
		i++
	}
	return t
}

// breakLen is the length of the line break at the start of b, or 0.
func breakLen(b []byte) int {
	switch {
	case len(b) == 0:
		return 0
	case b[0] == '\r' && len(b) > 1 && b[1] == '\n':
		return 2
	case b[0] == '\r' || b[0] == '\n':
		return 1
	case bytes.HasPrefix(b, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(b, []byte("\u2028")), bytes.HasPrefix(b, []byte("\u2029")):
		return 3
	}
	return 0
}

// lines is the number of lines; text ending in a line break has an empty
// last line, where YAML reports the end of the input.
func (t *text) lines() int { return len(t.starts) }

// start is the offset of the first byte of line l (1-based).
func (t *text) start(l int) int {
	if l == 1 {
		return t.bom
	}
	return t.starts[l-1]
}

// next is the offset just after line l and its line break.
func (t *text) next(l int) int {
	if l < len(t.starts) {
		return t.starts[l]
	}
	return len(t.data)
}

// end is the offset of the line break that ends line l (or of the end of
// the text).
func (t *text) end(l int) int {
	e, stop := t.start(l), t.next(l)
	for e < stop && breakLen(t.data[e:]) == 0 {
		e++
	}
	return e
}

// line is the content of line l without its line break.
func (t *text) line(l int) []byte { return t.data[t.start(l):t.end(l)] }

// pos is the position of the byte at off.
func (t *text) pos(off int) Pos {
	l := sort.Search(len(t.starts), func(i int) bool { return t.starts[i] > off })
	s := t.start(l)
	return Pos{Line: l, Col: 1 + utf8.RuneCount(t.data[s:max(off, s)])}
}

// offset is the byte offset of the position (line, col), and whether that
// position is on the line.
func (t *text) offset(line, col int) (int, bool) {
	if line < 1 || line > t.lines() || col < 1 {
		return 0, false
	}
	off, end := t.start(line), t.end(line)
	for c := 1; c < col; c++ {
		if off >= end {
			return 0, false
		}
		_, n := utf8.DecodeRune(t.data[off:end])
		off += n
	}
	return off, true
}

// firstNonBlank is the offset of the first character of line l that is not
// a space or a tab, or the end of the line.
func (t *text) firstNonBlank(l int) int {
	off, end := t.start(l), t.end(l)
	for off < end && (t.data[off] == ' ' || t.data[off] == '\t') {
		off++
	}
	return off
}
