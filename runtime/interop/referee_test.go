package interop_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// referee is the shared judge of an interoperability test: a line-based TCP
// server on 127.0.0.1 that every contender — Go, Java or Python — tells when
// it enters and leaves its critical section. It answers each line only once
// it has recorded it, so a contender knows its entry was seen before it goes
// on. The protocol, one request and one answer per line:
//
//	hello <who>        -> go   once every expected contender said hello
//	enter <who> <mode> -> ok   mode x = exclusive (mutex, write, leadership),
//	                           r = shared (read), s = one of a semaphore's leases
//	exit <who> <mode>  -> ok
//
// Anything else is answered "err ..." and recorded as a protocol error.
//
// A violation is an x entry while anyone is inside, an r entry while an x
// holder is inside, or an s entry that makes more s holders inside than the
// referee's leases (see setLeases), or next to an x holder. The referee also counts completed cycles per contender
// and how often a reader entered while other readers were inside.
type referee struct {
	ln net.Listener

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every state change
	expected int           // contenders the hello barrier waits for
	hellos   map[string]bool
	started  chan struct{} // closed once len(hellos) == expected
	inside   map[string]string
	cycles   map[string]int
	overlaps int // r entries while another reader was inside
	maxIn    int // most contenders inside at once
	leases   int // most s holders allowed inside at once
	maxS     int // most s holders inside at once
	lastLib  string
	switches int // entries by another library than the previous entry's
	bad      []string
	pauses   map[string]*pause
	conns    map[net.Conn]bool
	closed   bool
	done     chan struct{} // closed when the referee shuts down
	wg       sync.WaitGroup
}

// pause holds a contender inside its critical section: see holdNext.
type pause struct {
	entered chan struct{}
	release chan struct{}
}

// newReferee starts a referee that waits for expected hellos before letting
// anyone start; it is shut down at the end of the test.
func newReferee(t *testing.T, expected int) *referee {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("referee: %v", err)
	}
	r := &referee{
		ln:       ln,
		changed:  make(chan struct{}),
		expected: expected,
		hellos:   map[string]bool{},
		started:  make(chan struct{}),
		inside:   map[string]string{},
		cycles:   map[string]int{},
		pauses:   map[string]*pause{},
		conns:    map[net.Conn]bool{},
		done:     make(chan struct{}),
	}
	if expected <= 0 {
		close(r.started)
	}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

// Addr is the address contenders connect to.
func (r *referee) Addr() string { return r.ln.Addr().String() }

func (r *referee) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.done)
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
}

func (r *referee) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			return
		}
		r.conns[c] = true
		r.mu.Unlock()
		r.wg.Add(1)
		go r.serve(c)
	}
}

// serve answers one contender connection.
func (r *referee) serve(c net.Conn) {
	defer r.wg.Done()
	var who string // set by hello
	defer func() {
		c.Close()
		r.mu.Lock()
		delete(r.conns, c)
		if mode, in := r.inside[who]; in && who != "" && !r.closed {
			r.badf("%s disconnected while inside (mode %s)", who, mode)
			delete(r.inside, who)
		}
		r.notify()
		r.mu.Unlock()
	}()
	sc := bufio.NewScanner(c)
	w := bufio.NewWriter(c)
	answer := func(s string) bool {
		w.WriteString(s + "\n")
		return w.Flush() == nil
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "hello":
			if who != "" {
				r.protocol(answer, "second hello %q on the connection of %s", f[1], who)
				return
			}
			who = f[1]
			started := r.hello(who)
			select {
			case <-started:
			case <-r.done:
				return
			}
			if !answer("go") {
				return
			}
		case len(f) == 3 && (f[0] == "enter" || f[0] == "exit") && (f[2] == "x" || f[2] == "r" || f[2] == "s"):
			if f[1] != who {
				r.protocol(answer, "%s for %q on the connection of %q", f[0], f[1], who)
				return
			}
			var p *pause
			if f[0] == "enter" {
				p = r.enter(who, f[2])
			} else {
				r.exit(who, f[2])
			}
			if p != nil {
				select {
				case <-p.release:
				case <-r.done:
					return
				}
			}
			if !answer("ok") {
				return
			}
		default:
			r.protocol(answer, "bad line %q from %q", sc.Text(), who)
			return
		}
	}
}

func (r *referee) protocol(answer func(string) bool, format string, args ...any) {
	r.mu.Lock()
	r.badf("protocol error: "+format, args...)
	r.mu.Unlock()
	answer("err " + fmt.Sprintf(format, args...))
}

// badf records a violation or protocol error; r.mu is held.
func (r *referee) badf(format string, args ...any) {
	r.bad = append(r.bad, fmt.Sprintf(format, args...))
	r.notify()
}

// notify wakes everyone waiting in until; r.mu is held.
func (r *referee) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *referee) hello(who string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hellos[who] {
		r.badf("protocol error: %s said hello twice", who)
	}
	r.hellos[who] = true
	if len(r.hellos) == r.expected {
		close(r.started)
	}
	r.notify()
	return r.started
}

// enter records an entry and returns the pause to wait on before answering,
// if the test asked to hold this contender inside.
func (r *referee) enter(who, mode string) *pause {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, in := r.inside[who]; in {
		r.badf("protocol error: %s entered (%s) while already inside (%s)", who, mode, m)
	}
	var others, writers, readers, leases []string
	for o, m := range r.inside {
		if o == who {
			continue
		}
		others = append(others, o+"("+m+")")
		switch m {
		case "x":
			writers = append(writers, o)
		case "s":
			leases = append(leases, o)
		default:
			readers = append(readers, o)
		}
	}
	slices.Sort(others)
	switch {
	case mode == "x" && len(others) > 0:
		r.badf("VIOLATION: %s entered exclusively while inside: %s", who, strings.Join(others, ", "))
	case mode != "x" && len(writers) > 0:
		r.badf("VIOLATION: %s (%s) entered while inside: %s", who, mode, strings.Join(others, ", "))
	case mode == "s" && len(leases)+1 > r.leases:
		r.badf("VIOLATION: %s took lease %d of %d; inside: %s", who, len(leases)+1, r.leases, strings.Join(others, ", "))
	case mode == "r" && len(readers) > 0:
		r.overlaps++
	}
	if mode == "s" {
		r.maxS = max(r.maxS, len(leases)+1)
	}
	r.inside[who] = mode
	r.maxIn = max(r.maxIn, len(r.inside))
	if lib := library(who); lib != r.lastLib {
		if r.lastLib != "" {
			r.switches++
		}
		r.lastLib = lib
	}
	p := r.pauses[who]
	if p != nil {
		delete(r.pauses, who)
		close(p.entered)
	}
	r.notify()
	return p
}

func (r *referee) exit(who, mode string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch m, in := r.inside[who]; {
	case !in:
		r.badf("protocol error: %s left (%s) without being inside", who, mode)
		return
	case m != mode:
		r.badf("protocol error: %s entered as %s but left as %s", who, m, mode)
	}
	delete(r.inside, who)
	r.cycles[who]++
	r.notify()
}

// setLeases sets how many s holders may be inside at once (default 0: an s
// entry is a violation).
func (r *referee) setLeases(n int) {
	r.mu.Lock()
	r.leases = n
	r.mu.Unlock()
}

// library is the language part of a contender name: "go" for go1-x,
// "curator" for curator0-1-w.
func library(who string) string {
	return strings.TrimRight(strings.SplitN(who, "-", 2)[0], "0123456789")
}

// holdNext makes the next entry of who wait inside: the entry is recorded
// and entered is closed, but who's "ok" is withheld until release is called
// (or the referee shuts down). release is idempotent.
func (r *referee) holdNext(who string) (entered <-chan struct{}, release func()) {
	p := &pause{entered: make(chan struct{}), release: make(chan struct{})}
	r.mu.Lock()
	r.pauses[who] = p
	r.mu.Unlock()
	var once sync.Once
	return p.entered, func() { once.Do(func() { close(p.release) }) }
}

// String describes the referee's state, for failure messages and logs.
func (r *referee) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var in, cy []string
	for w, m := range r.inside {
		in = append(in, w+"("+m+")")
	}
	for w, n := range r.cycles {
		cy = append(cy, fmt.Sprintf("%s=%d", w, n))
	}
	slices.Sort(in)
	slices.Sort(cy)
	return fmt.Sprintf("hellos %d/%d, inside [%s], cycles [%s], reader overlaps %d, max inside %d, library switches %d, %d violation/protocol errors",
		len(r.hellos), r.expected, strings.Join(in, " "), strings.Join(cy, " "), r.overlaps, r.maxIn, r.switches, len(r.bad))
}

// stats is a snapshot of the referee's counters.
type stats struct {
	cycles   map[string]int
	total    int
	overlaps int
	maxIn    int
	maxS     int // most semaphore holders inside at once
	switches int
	bad      []string
}

func (r *referee) stats() stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := stats{cycles: map[string]int{}, overlaps: r.overlaps, maxIn: r.maxIn, maxS: r.maxS, switches: r.switches, bad: slices.Clone(r.bad)}
	for w, n := range r.cycles {
		s.cycles[w] = n
		s.total += n
	}
	return s
}

// check fails the test for every violation or protocol error recorded so
// far, and unless every contender in want completed exactly its number of
// cycles.
func (r *referee) check(t *testing.T, want map[string]int) stats {
	t.Helper()
	s := r.stats()
	for _, b := range s.bad {
		t.Error(b)
	}
	for who, n := range want {
		if s.cycles[who] != n {
			t.Errorf("%s completed %d cycles, want %d", who, s.cycles[who], n)
		}
	}
	for who := range s.cycles {
		if _, ok := want[who]; !ok {
			t.Errorf("unexpected contender %s", who)
		}
	}
	return s
}

// refClient is a Go contender's connection to the referee.
type refClient struct {
	who string
	c   net.Conn
	sc  *bufio.Scanner
}

// dialReferee connects who and says hello; it returns when the referee
// lets every contender start.
func dialReferee(ctx context.Context, addr, who string) (*refClient, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	rc := &refClient{who: who, c: c, sc: bufio.NewScanner(c)}
	if err := rc.call(ctx, "hello "+who, "go"); err != nil {
		c.Close()
		return nil, err
	}
	return rc, nil
}

// call sends one line and checks the answer; ctx bounds the wait.
func (rc *refClient) call(ctx context.Context, line, want string) error {
	stop := context.AfterFunc(ctx, func() { rc.c.Close() })
	defer stop()
	if _, err := fmt.Fprintf(rc.c, "%s\n", line); err != nil {
		return errors.Join(fmt.Errorf("referee %q: %w", line, err), ctx.Err())
	}
	if !rc.sc.Scan() {
		return errors.Join(fmt.Errorf("referee %q: no answer: %v", line, rc.sc.Err()), ctx.Err())
	}
	if got := rc.sc.Text(); got != want {
		return fmt.Errorf("referee answered %q to %q", got, line)
	}
	return nil
}

func (rc *refClient) enter(ctx context.Context, mode string) error {
	return rc.call(ctx, "enter "+rc.who+" "+mode, "ok")
}

func (rc *refClient) exit(ctx context.Context, mode string) error {
	return rc.call(ctx, "exit "+rc.who+" "+mode, "ok")
}

func (rc *refClient) Close() error { return rc.c.Close() }

// The referee's own rules, without ZooKeeper: readers share, an exclusive
// entry next to anyone and a reader next to a writer are violations, and
// leaving without entering is a protocol error.
func TestRefereeRules(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	ref := newReferee(t, 3)
	clients := make([]*refClient, 3)
	var wg sync.WaitGroup
	for i, who := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() { // the hello barrier lets nobody start until all three said hello
			defer wg.Done()
			rc, err := dialReferee(ctx, ref.Addr(), who)
			if err != nil {
				t.Error(err)
				return
			}
			clients[i] = rc
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	a, b, c := clients[0], clients[1], clients[2]
	step := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	step(a.enter(ctx, "r"))
	step(b.enter(ctx, "r")) // shared: an overlap, no violation
	step(c.enter(ctx, "x")) // violation: exclusive next to two readers
	step(b.exit(ctx, "r"))
	step(a.exit(ctx, "r"))
	step(a.enter(ctx, "r")) // violation: reader next to a writer
	step(a.exit(ctx, "r"))
	step(c.exit(ctx, "x"))
	step(b.exit(ctx, "r")) // protocol error: b is not inside

	st := ref.stats()
	want := []string{
		"VIOLATION: c entered exclusively while inside: a(r), b(r)",
		"VIOLATION: a (r) entered while inside: c(x)",
		"protocol error: b left (r) without being inside",
	}
	if !slices.Equal(st.bad, want) {
		t.Errorf("recorded %q, want %q", st.bad, want)
	}
	if st.overlaps != 1 || st.cycles["a"] != 2 || st.cycles["b"] != 1 || st.cycles["c"] != 1 {
		t.Errorf("overlaps %d, cycles %v; want 1 and a=2 b=1 c=1", st.overlaps, st.cycles)
	}
}

// The referee's semaphore rule, without ZooKeeper: up to leases s holders
// share, one more is a violation.
func TestRefereeLeases(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	ref := newReferee(t, 0)
	ref.setLeases(2)
	var cs []*refClient
	for _, who := range []string{"a", "b", "c"} {
		rc, err := dialReferee(ctx, ref.Addr(), who)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		cs = append(cs, rc)
	}
	for i, rc := range cs {
		if err := rc.enter(ctx, "s"); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}
	st := ref.stats()
	want := []string{"VIOLATION: c took lease 3 of 2; inside: a(s), b(s)"}
	if !slices.Equal(st.bad, want) || st.maxS != 3 {
		t.Errorf("recorded %q, max %d inside; want %q and 3", st.bad, st.maxS, want)
	}
}
