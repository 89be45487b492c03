package client

import (
	"encoding/binary"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"
)

// Ops is a session's view for the recipes: its operations, each bound to
// a context and retried or resolved as the session's policy says (ops.go,
// retry.go, pipeline.go), and what a recipe reads of the session's
// settings. It is the same session (OpsOf); it holds nothing of its
// own.
type Ops Session

// OpsOf returns s's operations and settings, for recipes. It is a
// function, not a method, so that the operations stay out of the public
// Session (runtime.Session is this type).
func OpsOf(s *Session) *Ops { return (*Ops)(s) }

// Log returns the session's logger (WithLogger).
func (o *Ops) Log() *slog.Logger { return o.log }

// Policy returns the session's retry policy (WithRetry).
func (o *Ops) Policy() RetryPolicy { return o.policy }

// Rand returns the session's source of random choices (WithRandomSeed;
// nil, the system's, by default).
func (o *Ops) Rand() *Rand { return o.rand }

// Backoff returns the retry policy's delay before retry n (see
// RetryPolicy.Delay) of the loop of key (BackoffKey), its jitter drawn
// from the session's Rand for that key and n alone (Rand.Int64NFor).
func (o *Ops) Backoff(key uint64, n int) time.Duration {
	return o.policy.delay(n, o.rand, key<<8^uint64(n))
}

// BackoffKey returns a key for a loop that backs off (Backoff), started
// where the caller stands: with a seeded Rand (a simulation) the same on
// every run for the same place and the same count of loops started there
// (Rand.KeyAt); without one, 0 (the jitter is the system's).
func (o *Ops) BackoffKey() uint64 {
	if o.rand == nil {
		return 0
	}
	return o.rand.KeyAt(callerPlace())
}

// Nonce returns eight bytes that tell this session's attempts to create
// the node at path apart, for a create whose outcome a lost reply hides:
// the node found afterwards is the attempt's own only if it carries them
// (and this session owns it), not one this session made before for
// another purpose. With a seeded Rand (a simulation) they are drawn for
// path and the count of nonces drawn for it before (Rand.KeyAt), the same
// on every run whatever other goroutines draw meanwhile; otherwise from
// the system.
func (o *Ops) Nonce(path string) []byte {
	var v uint64
	if o.rand == nil {
		v = rand.Uint64()
	} else {
		v = uint64(o.rand.Int64NFor(o.rand.KeyAt("nonce "+path), math.MaxInt64))
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v)
}

// ReadOnly reports whether the session may connect to a read-only server
// (WithReadOnly).
func (o *Ops) ReadOnly() bool { return o.readOnly }

// Dials counts the connections the session has dialled: a change between
// two reads means another server may have answered the later one.
func (o *Ops) Dials() int64 { return o.dials.Load() }

// Telemetry returns the providers the session's telemetry options set.
func (o *Ops) Telemetry() TelemetryConfig { return o.telCfg }

// session returns o as the Session it is.
func (o *Ops) session() *Session { return (*Session)(o) }
