package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Faults on command, each a call a test makes, and at random from a seed
// (WithRandomFaults). Opcodes are ZooKeeper's (zktest.OpCreate, ...).

// faultKind is what happens to a request hit by a fault.
type faultKind int

const (
	faultNone        faultKind = iota
	faultCutBefore             // not executed; the connection is cut
	faultCutAfter              // executed; the connection is cut before the reply
	faultHoldReplies           // executed; nothing reaches the client any more on that connection
)

func (k faultKind) String() string {
	return [...]string{"none", "cut before the request", "cut after the request", "hold replies after the request"}[k]
}

type trigger struct {
	op    int32
	kind  faultKind
	fired chan struct{}
}

type faults struct {
	triggers []*trigger
	isolated map[int64]bool
	random   bool // WithRandomFaults
	seed     uint64
	rate     float64
	limit    int                  // WithFaultLimit: at most this many random faults; 0: no limit
	skip     map[string]bool      // WithoutFaults: fault ids that do not fire
	plan     map[string]faultKind // WithFaultPlan: the faults that fire, by id; nil: drawn
	log      []Fault              // what the random schedule did, for the test's report
}

// Fault is one random fault that fired (WithRandomFaults).
type Fault struct {
	// ID names the draw: "s3#17" is the 17th request (pings, auth and
	// setWatches not counted) of the 3rd session the server created. The
	// same seed draws the same fault for the same id, whatever else the
	// clients do, so a search can leave one fault out (WithoutFaults).
	ID   string
	At   time.Time // the server's clock: virtual time in a synctest bubble
	Op   int32     // the request's opcode
	Kind string    // "cut before the request", "cut after the request", "hold replies after the request"
	Step uint64    // the step it fired in on a stepped server (Steps), else 0
}

// String reads "s3#17 cut after the request (op 2)".
func (f Fault) String() string { return fmt.Sprintf("%s %s (op %d)", f.ID, f.Kind, f.Op) }

// CutBeforeRequest arms a one-shot fault: the next request of opcode op on
// any connection is not executed, and its connection is cut (the client
// knows the request did not happen only if it knows it was never sent).
// The channel is closed when it fired.
func (s *Server) CutBeforeRequest(op int32) <-chan struct{} { return s.arm(op, faultCutBefore) }

// CutAfterRequest arms a one-shot fault: the next request of opcode op is
// executed and its connection is cut before the reply: it happened, and
// the client does not know.
func (s *Server) CutAfterRequest(op int32) <-chan struct{} { return s.arm(op, faultCutAfter) }

// HoldRepliesAfterRequest arms a one-shot fault: the next request of
// opcode op is executed, and from then on nothing the server sends reaches
// the client on that connection (the client's requests, pings included,
// still reach the server): it hears nothing until it gives up itself.
func (s *Server) HoldRepliesAfterRequest(op int32) <-chan struct{} {
	return s.arm(op, faultHoldReplies)
}

func (s *Server) arm(op int32, kind faultKind) <-chan struct{} {
	t := &trigger{op: op, kind: kind, fired: make(chan struct{})}
	s.mu.Lock()
	s.faults.triggers = append(s.faults.triggers, t)
	s.mu.Unlock()
	return t.fired
}

// Isolate cuts the session id off while on: its connections stay open but
// nothing from or to them gets through (a network partition), so the
// server expires the session on its own clock, and the client gives up on
// its own. Off lets traffic through again; a connection that lost a
// request or a reply meanwhile is closed then — on TCP, bytes are not
// lost from a connection that lives on (they arrive late, or the
// connection breaks), and a client would wait for a lost reply forever.
func (s *Server) Isolate(id int64, on bool) {
	s.mu.Lock()
	if s.faults.isolated == nil {
		s.faults.isolated = map[int64]bool{}
	}
	var broken *conn
	if on {
		s.faults.isolated[id] = true
	} else {
		delete(s.faults.isolated, id)
		if ss := s.sessions[id]; ss != nil && ss.conn != nil {
			ss.conn.mu.Lock()
			if ss.conn.lost {
				broken = ss.conn
			}
			ss.conn.mu.Unlock()
		}
	}
	s.mu.Unlock()
	if broken != nil {
		broken.close()
	}
}

// CutConnection closes the session's connection now; the session lives on
// (the client reconnects to it).
func (s *Server) CutConnection(id int64) {
	s.mu.Lock()
	ss := s.sessions[id]
	var c *conn
	if ss != nil {
		c = ss.conn
	}
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// WithRandomFaults makes each request (pings, auth and setWatches aside)
// hit a fault with probability rate — cut before it, cut after it, or
// replies held after it, chosen at random — drawn from seed and the
// request's place (the n-th request of the k-th session; see Fault.ID),
// not from the order requests of different sessions happen to arrive in:
// the test prints the seed, and FaultLog says what happened.
func WithRandomFaults(seed uint64, rate float64) Option {
	return func(c *config) { c.faultSeed, c.faultRate = seed, rate }
}

// WithFaultLimit stops the random faults after n have fired (n > 0).
func WithFaultLimit(n int) Option {
	return func(c *config) { c.faultLimit = n }
}

// WithoutFaults keeps the random faults of these ids (Fault.ID) from
// firing: a search drops faults one at a time to find the ones a failure
// needs.
func WithoutFaults(ids ...string) Option {
	return func(c *config) { c.faultSkip = append(c.faultSkip, ids...) }
}

// WithFaultPlan makes the random faults those of plan (a FaultLog saved
// from an earlier run) instead of drawn: the request whose place
// (Fault.ID) a fault of plan names gets that fault's Kind, and no other
// request gets one. A run of changed code that makes its requests in the
// order the saved run did meets the same faults; one that makes them in
// another order meets them at the same places (the n-th request of the
// k-th session) all the same. SetFaultRate(0) still stops them, and
// WithoutFaults still leaves ids out. It panics on a Kind no Fault has.
func WithFaultPlan(plan []Fault) Option {
	return func(c *config) { c.faultPlan = slices.Clone(plan) }
}

// init sets the random faults up from cfg (WithRandomFaults,
// WithFaultPlan, WithFaultLimit, WithoutFaults).
func (f *faults) init(cfg config) {
	if cfg.faultPlan != nil {
		f.plan = map[string]faultKind{}
		for _, x := range cfg.faultPlan {
			k := slices.IndexFunc([]faultKind{faultCutBefore, faultCutAfter, faultHoldReplies}, func(k faultKind) bool { return k.String() == x.Kind })
			if k < 0 {
				panic(fmt.Sprintf("sim: no fault kind %q", x.Kind))
			}
			f.plan[x.ID] = faultKind(1 + k)
		}
		cfg.faultRate = cmp.Or(cfg.faultRate, 1)
	}
	if cfg.faultRate > 0 {
		f.random, f.seed, f.rate = true, cfg.faultSeed, cfg.faultRate
		f.limit = cfg.faultLimit
		f.skip = map[string]bool{}
		for _, id := range cfg.faultSkip {
			f.skip[id] = true
		}
	}
}

// SetFaultRate changes the probability of a random fault (see
// WithRandomFaults); 0 stops them, for a workload's quiet end.
func (s *Server) SetFaultRate(rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.rate = rate
}

// FaultLog returns what the random faults (WithRandomFaults) did, in order.
func (s *Server) FaultLog() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Fault(nil), s.faults.log...)
}

// faultFor returns the fault that hits a request of opcode op of session
// ss (under the server's lock).
func (s *Server) faultFor(ss *session, op int32) faultKind {
	f := &s.faults
	for i, t := range f.triggers {
		if t.op == op {
			f.triggers = append(f.triggers[:i:i], f.triggers[i+1:]...)
			close(t.fired)
			return t.kind
		}
	}
	if !f.random || op == opPing || op == opAuth || op == opSetWatches || op == opSetWatches2 {
		return faultNone
	}
	ss.requests++
	if f.limit > 0 && len(f.log) >= f.limit {
		return faultNone
	}
	id := fmt.Sprintf("s%d#%d", ss.ordinal, ss.requests)
	k := f.draw(ss)
	if f.plan != nil && f.rate > 0 {
		k = f.plan[id]
	}
	if k == faultNone || f.skip[id] {
		return faultNone
	}
	f.log = append(f.log, Fault{ID: id, At: time.Now(), Op: op, Kind: k.String(), Step: s.Steps()})
	return k
}

// draw is the random fault of ss's latest request: none, or one drawn
// from the seed and the request's place.
func (f *faults) draw(ss *session) faultKind {
	h := mix(mix(f.seed^uint64(ss.ordinal)*0x9e3779b97f4a7c15) ^ uint64(ss.requests)*0xbf58476d1ce4e5b9)
	if float64(h>>11)/(1<<53) >= f.rate {
		return faultNone
	}
	return faultKind(1 + mix(h)%3)
}

// mix is splitmix64's finaliser: a well-spread hash of x.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
