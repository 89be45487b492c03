package simsearch

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// entry is one line of a run's history: when (the virtual time since
// the start, then the server's steps taken by then: sim.WithSteps), who
// (a process; -1 the chaos and the harness; -2 a fault), and its place in
// the record. A history is in that order: what processes record between
// two steps of the server is in process order, whatever order Go's
// scheduler ran them in.
type entry struct {
	at   time.Duration
	step uint64
	who  int
	seq  int
	text string
}

func (e entry) String() string {
	p := fmt.Sprintf("p%d", e.who)
	switch e.who {
	case -1:
		p = "--"
	case -2:
		p = "fault"
	}
	return fmt.Sprintf("%9.3fs %s %s", e.at.Seconds(), p, e.text)
}

func byHistory(a, b entry) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.step, b.step), cmp.Compare(a.who, b.who), cmp.Compare(a.seq, b.seq))
}

func lines(es []entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.String()
	}
	return out
}

// historyHash is a rolling hash of a history (FNV-1a over its lines, each
// ended by a newline): sums[i] is the hash of lines[:i+1].
func historyHash(lines []string) (sums []uint64) {
	h := fnv.New64a()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
		sums = append(sums, h.Sum64())
	}
	return sums
}

// Hash is the hash of a whole history (Run.History): FNV-1a over its
// lines, each ended by a newline. Two runs with one hash ran alike.
func Hash(lines []string) uint64 {
	if sums := historyHash(lines); len(sums) > 0 {
		return sums[len(sums)-1]
	}
	return fnv.New64a().Sum64()
}

// divergenceContext is how many lines both histories share that a
// divergence shows before the first that differs.
const divergenceContext = 25

// Divergence describes where histories a and b part: the first line that
// differs (or that one of them lacks), with the lines before it that both
// share.
func Divergence(a, b []string) string {
	return divergenceAt(a, b, firstDifference(a, b))
}

// firstDifference is the index of the first line where a and b differ.
func firstDifference(a, b []string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// divergenceAt is Divergence, the first difference being at line i.
func divergenceAt(a, b []string, i int) string {
	line := func(h []string) string {
		if i < len(h) {
			return h[i]
		}
		return "(the history ends)"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "the histories part at line %d of %d and %d:\n", i+1, len(a), len(b))
	for k := max(0, i-divergenceContext); k < i; k++ {
		fmt.Fprintf(&s, "  both:  %s\n", a[k])
	}
	fmt.Fprintf(&s, "  first: %s\n  again: %s\n", line(a), line(b))
	return s.String()
}
