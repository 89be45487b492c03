package client

import (
	crand "crypto/rand"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Rand is a session's source of random choices: the GUIDs in its node
// names, the jitter of its back-offs, the order it tries the servers in,
// and the recipes' random pauses. A nil *Rand draws from the system
// (crypto/rand for GUIDs, math/rand/v2's global source otherwise); a
// session given WithRandomSeed draws from its seed, so that a simulated
// run makes the same choices each time. Safe for concurrent use.
type Rand struct {
	mu           sync.Mutex
	r            *rand.Rand
	seed, stream uint64            // Int64NFor's
	places       map[string]uint64 // KeyAt's: the keys given at each place, under mu
}

// WithRandomSeed makes the sessions opened with this option draw their
// random choices (see Rand) from seed instead of the system: for a
// simulation (runtime/zktest/sim) that must replay. Each session given
// this one option value draws from a stream of its own (the first from
// stream 1, the next from stream 2, ...; Supervise's probe of its options
// takes one too), so that successive sessions of one process never share
// a GUID; two option values with one seed do. Not for production: GUIDs
// drawn from a shared seed are no longer unique across processes.
// Default: the system's randomness.
func WithRandomSeed(seed uint64) Option {
	var streams atomic.Uint64
	return func(s *Session) { s.rand = newRand(seed, streams.Add(1)) }
}

// newRand returns the source of stream n of seed.
func newRand(seed, n uint64) *Rand {
	return &Rand{r: rand.New(rand.NewPCG(seed, n)), seed: seed, stream: n}
}

// KeyAt returns a key for Int64NFor for a loop that starts where place
// names (a goroutine's stack, see callerPlace): the k-th loop to start at
// place gets the same key on every run of one binary, whatever loops
// started elsewhere meanwhile. Keys handed out in the order the loops
// start in would follow the scheduler for goroutines started at one
// instant (a marker's delete and a claim's release, both failed by one
// cut), and they swapped their back-offs from run to run.
func (r *Rand) KeyAt(place string) uint64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	if r.places == nil {
		r.places = map[string]uint64{}
	}
	r.places[place]++
	k := r.places[place]
	r.mu.Unlock()
	h := fnv.New64a()
	h.Write([]byte(place))
	return h.Sum64() ^ k*0x9e3779b97f4a7c15
}

// Int64NFor returns a number in [0, n) drawn for key alone: the same for
// one key (of one seed and stream) whatever else was drawn before, so
// that goroutines woken at once draw the same numbers in whatever order
// they run — as the callers flushed together by a lost connection do,
// each with the key of its own call. A nil Rand draws a random one.
func (r *Rand) Int64NFor(key uint64, n int64) int64 {
	if r == nil {
		return rand.Int64N(n)
	}
	return rand.New(rand.NewPCG(r.seed, r.stream<<32^key)).Int64N(n)
}

// Int64N returns a number in [0, n).
func (r *Rand) Int64N(n int64) int64 {
	if r == nil {
		return rand.Int64N(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Int64N(n)
}

// IntN returns a number in [0, n).
func (r *Rand) IntN(n int) int { return int(r.Int64N(int64(n))) }

// Uint64 returns a number of 64 random bits.
func (r *Rand) Uint64() uint64 {
	if r == nil {
		return rand.Uint64()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Uint64()
}

// NewGUID returns a fresh (version 4) UUID in its canonical 36-character
// form, the form Curator's protected nodes carry.
func (r *Rand) NewGUID() string { return string(r.AppendGUID(nil, true)) }

// AppendGUID appends a fresh (version 4) UUID to b: in its canonical
// form, or with dashes false as 32 hex digits (kazoo's form).
func (r *Rand) AppendGUID(b []byte, dashes bool) []byte {
	var u [16]byte
	if r == nil {
		if _, err := crand.Read(u[:]); err != nil {
			panic("runtime: crypto/rand failed: " + err.Error())
		}
	} else {
		r.mu.Lock()
		for i := 0; i < len(u); i += 8 {
			v := r.r.Uint64()
			for k := range 8 {
				u[i+k] = byte(v >> (8 * k))
			}
		}
		r.mu.Unlock()
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	for i, c := range u {
		if dashes && (i == 4 || i == 6 || i == 8 || i == 10) {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return b
}

const hexDigits = "0123456789abcdef"
