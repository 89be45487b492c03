package spec

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// YAML syntax errors.
//
// yaml.v3 reports a syntax error with a line but no column, and for most
// parser errors the line is where the enclosing block or flow collection
// starts, not where the problem is ("line 4: did not find expected key"
// when line 6 is indented wrongly). syntaxError locates the problem itself,
// asking the YAML library about variants of the text:
//
//   - Parsed from the reported line on, the enclosing construct starts on
//     the first line, and yaml.v3 then names the problem's own line.
//   - In block context the problem is on the first line whose text, cut
//     after that line, fails the same way, and at the first character that
//     makes a prefix of that line fail so.
//   - In a flow collection a cut fails the same way wherever it is (the
//     collection is left open), but a line break does not change the
//     tokens: the problem moves to the next line exactly when a break is
//     put before it.
//   - Unclosed quoted strings and collections are reported at their opening
//     quote or bracket, tabs in the indentation at the tab.
//
// Where the answers are not consistent it keeps the line yaml.v3 names and
// says so in the message. The work is bounded by locateBudget.

var (
	yamlLineRE   = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	yamlAnchorRE = regexp.MustCompile(`^(?:yaml: )?unknown anchor '(.*)' referenced$`)
	// parserProblemRE matches the messages of libyaml's parser (as opposed
	// to its scanner), whose "line N" is 0-based.
	parserProblemRE = regexp.MustCompile(`^(did not find expected (<document start>|<stream-start>|node content|key|'-' indicator|',' or '\]'|',' or '\}')|found duplicate %(YAML|TAG) directive|found incompatible YAML document|found undefined tag handle)$`)
)

const (
	tabMessage = "tab in indentation; YAML indents with spaces"

	keyProblem      = "did not find expected key"
	entryProblem    = "did not find expected '-' indicator"
	flowMapProblem  = "did not find expected ',' or '}'"
	flowSeqProblem  = "did not find expected ',' or ']'"
	unclosedProblem = "found unexpected end of stream"
	nodeProblem     = "did not find expected node content"
	colonProblem    = "could not find expected ':'"
	docProblem      = "found unexpected document indicator"

	endInFlow = " (the file ends inside a flow collection that is never closed)"

	// locateBudget bounds the bytes of YAML that locating one syntax error
	// may parse, so that a huge or adversarial file costs little.
	locateBudget = 8 << 20
)

// contextNoun names the construct that starts on the line yaml.v3 reports
// with a parser error, or "" when that line is the problem's own.
func contextNoun(msg string) string {
	switch msg {
	case keyProblem:
		return "block mapping"
	case entryProblem:
		return "block sequence"
	case flowMapProblem:
		return "flow mapping"
	case flowSeqProblem:
		return "flow sequence"
	}
	return ""
}

// yamlError splits the text of a yaml.v3 error into the 1-based line it
// names (0 when it names none) and the problem.
func yamlError(text string) (line int, msg string) {
	msg = strings.TrimPrefix(text, "yaml: ")
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, msg
	}
	msg = m[2]
	l, err := strconv.Atoi(m[1])
	if err != nil || l <= 0 || l >= 1<<30 {
		return 0, msg
	}
	if parserProblemRE.MatchString(msg) {
		l++
	}
	return l, msg
}

// yamlErrorText decodes every document of data and returns the text of the
// first error, or "" when there is none.
func yamlErrorText(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; i <= len(data)+1; i++ {
		var n yaml.Node
		err := decodeDoc(dec, &n)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
	}
	return ""
}

// wideEncoding reports whether data starts like UTF-16 or UTF-32 text,
// whose bytes are not the characters yaml.v3 counts.
func wideEncoding(data []byte) bool {
	return bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0, 0})
}

// leadingTabs returns, for each line whose leading whitespace holds a tab,
// the offset of the first such tab.
func leadingTabs(t *text) map[int]int {
	var tabs map[int]int
	for l := 1; l <= t.lines(); l++ {
		for i := t.start(l); i < t.end(l) && (t.data[i] == ' ' || t.data[i] == '\t'); i++ {
			if t.data[i] == '\t' {
				if tabs == nil {
					tabs = map[int]int{}
				}
				tabs[l] = i
				break
			}
		}
	}
	return tabs
}

// syntaxError reports a YAML library error at the offending character when
// it can be found, and otherwise at the line the library names.
func (p *parser) syntaxError(data []byte, err error) {
	target := err.Error()
	line, msg := yamlError(target)
	if m := yamlAnchorRE.FindStringSubmatch(msg); m != nil {
		pos := Pos{Line: 1, Col: 1}
		if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 && !wideEncoding(data) {
			pos = newText(data).pos(i)
		}
		p.errs = append(p.errs, &Error{File: p.file, Pos: pos, Msg: "invalid YAML: " + msg})
		return
	}
	pos, text := locateSyntaxError(data, target, line, msg)
	p.errs = append(p.errs, &Error{File: p.file, Pos: pos, Msg: text})
}

// probe parses prefixes and variants of the spec text, within a budget.
type probe struct {
	data   []byte
	target string // the error text of the whole spec
	budget int    // bytes still allowed to be parsed
	spent  bool   // the budget ran out; answers since are not to be trusted
}

func (pr *probe) errorText(b []byte) string {
	if pr.spent || len(b)+64 > pr.budget {
		pr.spent = true
		return ""
	}
	pr.budget -= len(b) + 64
	return yamlErrorText(b)
}

// fails reports whether data[:n] fails with the target error.
func (pr *probe) fails(n int) bool { return pr.errorText(pr.data[:n]) == pr.target }

// failsLike reports whether data[:n] fails with message msg, on any line.
func (pr *probe) failsLike(n int, msg string) bool {
	_, m := yamlError(pr.errorText(pr.data[:n]))
	return m == msg
}

// locateSyntaxError finds the position of a YAML syntax error and words its
// message. target is the error text, line and msg its parts.
func locateSyntaxError(data []byte, target string, line int, msg string) (Pos, string) {
	reported := Pos{Line: max(line, 1), Col: 1}
	unlocated := "invalid YAML: " + msg + " (at or after this line)"
	if wideEncoding(data) {
		return reported, unlocated
	}
	t := newText(data)
	if reported.Line > t.lines() {
		// yaml.v3 puts the end of input that does not end in a line break
		// on a line of its own.
		switch msg {
		case nodeProblem:
			return t.pos(len(data)), "invalid YAML: " + msg + endInFlow
		case unclosedProblem:
			reported = t.pos(len(data))
		default:
			return t.pos(len(data)), "invalid YAML: " + msg + " (at the end of the file)"
		}
	}
	pr := &probe{data: data, target: target, budget: locateBudget}
	loc := pr.locate(t, reported.Line, msg)
	if pr.spent {
		loc = location{off: -1}
	}

	if off, ok := pr.tab(t, loc, reported.Line, msg); ok {
		return t.pos(off), tabMessage
	}
	switch {
	case loc.off >= 0:
		return t.pos(loc.off), "invalid YAML: " + msg + loc.note
	case loc.line > 0:
		return Pos{Line: loc.line, Col: 1}, "invalid YAML: " + msg + " (somewhere on this line)"
	}
	return reported, unlocated
}

// blockProblems are the messages of errors that a tab in the indentation of
// a line in block context causes on that line.
var blockProblems = map[string]bool{
	"found character that cannot start any token":                  true,
	"found a tab character that violates indentation":              true,
	"found a tab character where an indentation space is expected": true,
	"mapping values are not allowed in this context":               true,
	"block sequence entries are not allowed in this context":       true,
	colonProblem: true,
	keyProblem:   true,
	entryProblem: true,
}

// tab returns the offset of the tab that the target error is about: one in
// the leading whitespace of the problem line (or of the reported line r) when
// the error is a block-context one on that line or goes away or changes once
// the tab is a space, or the offending character itself when it is a tab
// in the indentation (after only blanks and "-" or "?" indicators).
func (pr *probe) tab(t *text, loc location, r int, msg string) (int, bool) {
	tabs := leadingTabs(t)
	for _, l := range []int{loc.line, r} {
		tab, ok := tabs[l]
		if !ok {
			continue
		}
		if l == loc.line && loc.off >= 0 && blockProblems[msg] {
			return tab, true
		}
		fixed := bytes.Clone(pr.data)
		for i := tab; i < t.end(l) && (fixed[i] == ' ' || fixed[i] == '\t'); i++ {
			fixed[i] = ' '
		}
		if pr.errorText(fixed) != pr.target && !pr.spent {
			return tab, true
		}
	}
	if loc.off < 0 || loc.off >= len(pr.data) || pr.data[loc.off] != '\t' {
		return 0, false
	}
	for i := t.start(loc.line); i < loc.off; i++ {
		switch c := pr.data[i]; {
		case c == ' ' || c == '\t':
		case (c == '-' || c == '?') && (pr.data[i+1] == ' ' || pr.data[i+1] == '\t'):
		default:
			return 0, false
		}
	}
	return loc.off, true
}

// location is where locate found a syntax error.
type location struct {
	off  int    // offset of the offending character; -1 when not found
	line int    // line of the problem, when known (else 0)
	note string // appended to the message, e.g. where the enclosing block starts
}

// locate finds the offending character of the target error, which yaml.v3
// reported on line r with message msg.
func (pr *probe) locate(t *text, r int, msg string) location {
	flow := msg == flowMapProblem || msg == flowSeqProblem || msg == nodeProblem
	if msg == colonProblem {
		// yaml.v3 names the line of the mapping key that lacks its ':'.
		// Such a key is one that must be there, at the indentation of its
		// block mapping: the first token of its line.
		if off := t.start(r) + firstToken(t.line(r)); off < t.end(r) {
			return location{off: off, line: r}
		}
	}
	if msg == unclosedProblem {
		return pr.unclosed(t, r, msg)
	}
	// The problem's line p. Parsed from line r on, the construct yaml.v3
	// named starts on the first line, and yaml.v3 then names the line of
	// the problem itself: line rel of that text. When that does not fail the
	// same way, r may be the problem's line already: yaml.v3 names it
	// instead of the construct's when that starts on line 1.
	ctx, p, rel, known := 0, 0, 0, false
	if l, m := yamlError(pr.errorText(pr.data[t.start(r):])); m == msg && r+max(l, 1)-1 <= t.lines() {
		ctx, rel, known = r, max(l, 1), true
		p = r + rel - 1
	} else if r >= 2 && parserProblemRE.MatchString(msg) {
		ctx, p, rel = 1, r, r
	}
	if p > 0 && flow {
		if loc, ok := pr.inFlow(t, ctx, p, rel, known, msg); ok {
			return loc
		}
	}
	if msg == docProblem {
		return pr.docMarker(t, max(p, r), r)
	}
	if p > 0 && !pr.fails(t.start(p)) && pr.fails(t.next(p)) {
		loc := pr.column(t, p, !flow && parserProblemRE.MatchString(msg))
		if loc.off >= 0 && known && p > ctx && contextNoun(msg) != "" {
			loc.note = " (in the " + contextNoun(msg) + " starting on line " + strconv.Itoa(ctx) + ")"
		}
		return loc
	}
	if flow {
		return location{off: -1, line: p}
	}
	return pr.scanForward(t, r, p, known, msg)
}

// unclosed locates an unclosed quoted string: yaml.v3 names the line
// where it starts (or, when that is line 1, the end of the input). Its
// opening quote is the start of the last run of prefixes that fail with
// the same message (the line differs when the end of the input moves).
func (pr *probe) unclosed(t *text, r int, msg string) location {
	for _, l := range []int{r, 1} {
		for i := t.end(l) - 1; i >= t.start(l); i-- {
			if c := pr.data[i]; (c == '"' || c == '\'') && pr.failsLike(i+1, msg) && !pr.failsLike(i, msg) {
				return location{off: i, line: l, note: " (this quoted string is never closed)"}
			}
		}
	}
	return location{off: -1}
}

// inFlow locates a problem on line p inside a flow collection opened on
// line ctx (rel: p's line in the text parsed from ctx; known: whether
// yaml.v3 named p). false: not found, locate goes on.
func (pr *probe) inFlow(t *text, ctx, p, rel int, known bool, msg string) (location, bool) {
	// The end of the input inside a flow collection fails the same way,
	// so prefixes cannot tell where the problem is; moving the rest of
	// the line to a line of its own can, since line breaks between
	// tokens do not matter there.
	if off := pr.flowToken(t, ctx, p, rel, msg); off >= 0 {
		loc := location{off: off, line: p}
		switch {
		case msg == nodeProblem:
		case known && p > ctx:
			loc.note = " (the " + contextNoun(msg) + " opened on line " + strconv.Itoa(ctx) + " is still open here)"
		default:
			loc.note = " (the " + contextNoun(msg) + " is still open here)"
		}
		return loc, true
	}
	if p == t.lines() && t.firstNonBlank(p) == t.end(p) {
		// The problem is the end of the input: the collection is never
		// closed. Its opener is the one on line ctx that, taken as the
		// start of the text, fails the same way.
		if msg == nodeProblem {
			return location{off: t.start(p), line: p, note: endInFlow}, true
		}
		if off := pr.opener(t, ctx, msg); off >= 0 {
			return location{off: off, line: ctx, note: " (this " + contextNoun(msg) + " is never closed)"}, true
		}
	}
	if msg != nodeProblem {
		return location{off: -1, line: p}, true
	}
	return location{}, false
}

// docMarker locates a document marker inside a quoted string that starts
// on line r, at the start of a line from line from on.
func (pr *probe) docMarker(t *text, from, r int) location {
	for l := from; l <= t.lines() && !pr.spent; l++ {
		if pr.fails(t.next(l)) && !pr.fails(t.start(l)) {
			return location{off: t.start(l), line: l, note: " (inside the quoted string that starts on line " + strconv.Itoa(r) + ")"}
		}
	}
	return location{off: -1}
}

// scanForward scans forward from the reported line r for the first line
// that fails (p: the line yaml.v3 named when known).
func (pr *probe) scanForward(t *text, r, p int, known bool, msg string) location {
	for l := r; l <= t.lines() && !pr.spent; l++ {
		if !pr.fails(t.next(l)) {
			continue
		}
		if l == r && pr.fails(t.start(l)) {
			break
		}
		loc := pr.column(t, l, parserProblemRE.MatchString(msg))
		if known && p < l && loc.off >= 0 {
			// yaml.v3 named line p: the offending token starts there and
			// ends on line l, a quoted string whose opening quote is then
			// the last one on line p.
			q := pr.data[loc.off]
			loc = location{off: -1, line: p}
			if i := bytes.LastIndexByte(t.line(p), q); i >= 0 && (q == '"' || q == '\'') {
				loc.off = t.start(p) + i
			}
		}
		return loc
	}
	return location{off: -1}
}

// opener finds the '{' or '[' on line r that opens the flow collection
// yaml.v3 reached the end of the input in: the rightmost one from which the
// rest of the text fails with the same message.
func (pr *probe) opener(t *text, r int, msg string) int {
	open := byte('{')
	if msg == flowSeqProblem {
		open = '['
	}
	for i := t.end(r) - 1; i >= t.start(r) && !pr.spent; i-- {
		if pr.data[i] != open {
			continue
		}
		if _, m := yamlError(pr.errorText(pr.data[i:])); m == msg {
			return i
		}
	}
	return -1
}

// column finds the offending character on line l, the first line whose text
// fails with the target error: the character that completes the shortest
// failing prefix that is longer than the last prefix of the line that
// parses and still fails with one more character. (A prefix may fail only
// because the input ends there: a ':' at the end of the input is a mapping
// value indicator whatever follows it in the file.) For a parser error
// (token) it is moved back to the start of the token when yaml.v3 completes
// that token only at its end.
func (pr *probe) column(t *text, l int, token bool) location {
	s, e := t.start(l), t.next(l)
	from := s
	for i := e; i > s && !pr.spent; {
		_, n := utf8.DecodeLastRune(pr.data[s:i])
		i -= n
		if pr.errorText(pr.data[:i]) == "" {
			from = i
			break
		}
	}
	for i := from; i < e && !pr.spent; {
		_, n := utf8.DecodeRune(pr.data[i:e])
		_, n2 := utf8.DecodeRune(pr.data[i+n : e])
		if pr.fails(i+n) && (i+n == e || pr.fails(i+n+n2)) {
			if token {
				i = s + tokenStart(pr.data[s:i+n], i-s)
			}
			return location{off: i, line: l}
		}
		i += n
	}
	return location{off: -1, line: l}
}

// tokenStart returns where the token that yaml.v3 completed with line[i]
// starts: a quoted string starts at its opening quote, and a ':' completes
// the mapping key before it, which starts at the line's first token (after
// any "- " or "? " indicators). Other tokens are taken to start at i.
func tokenStart(line []byte, i int) int {
	switch c := line[i]; c {
	case '"', '\'':
		// the last unescaped quote before i, when i closes a string
		var quotes []int
		for j := 0; j < i; j++ {
			switch {
			case c == '"' && line[j] == '\\':
				j++
			case line[j] == c:
				quotes = append(quotes, j)
			}
		}
		if len(quotes)%2 == 1 {
			return quotes[len(quotes)-1]
		}
	case ':':
		return min(firstToken(line), i)
	}
	return i
}

// firstToken is the offset in line of its first token after the
// indentation and any "- " or "? " indicators.
func firstToken(line []byte) int {
	j := 0
	for j < len(line) {
		switch {
		case line[j] == ' ' || line[j] == '\t':
			j++
		case (line[j] == '-' || line[j] == '?') && j+1 < len(line) && (line[j+1] == ' ' || line[j+1] == '\t'):
			j += 2
		default:
			return j
		}
	}
	return j
}

// flowToken finds the token on line p that made yaml.v3 fail with msg
// inside a flow collection; the problem is on line rel of the text from line
// r, where the collection (or the failing node) starts. It breaks line p
// before each character in turn, from the right: a break moves the problem
// to the next line exactly when it comes before the offending token, so
// the token starts at the last break that moves it, provided the break one
// character to the right leaves it in place. Breaks that change the error
// (inside a quoted string, say) answer nothing; it returns -1 when the
// answers do not pin the token down.
func (pr *probe) flowToken(t *text, r, p, rel int, msg string) int {
	base := t.start(r)
	sub := pr.data[base:]
	ls, le := t.start(p)-base, t.end(p)-base
	stayedRight := true // the break right of c left the problem on line p
	for c := le - 1; c >= ls && !pr.spent; c-- {
		if !utf8.RuneStart(sub[c]) {
			continue
		}
		broken := append(append(append(make([]byte, 0, len(sub)+1), sub[:c]...), '\n'), sub[c:]...)
		l, m := yamlError(pr.errorText(broken))
		switch {
		case m == msg && max(l, 1) == rel: // stayed: the problem starts before c
			stayedRight = true
		case m == msg && max(l, 1) == rel+1: // moved: the problem starts at c or after
			if !stayedRight || sub[c] == ' ' || sub[c] == '\t' || pr.spent {
				return -1
			}
			return base + c
		default:
			stayedRight = false
		}
	}
	return -1
}
