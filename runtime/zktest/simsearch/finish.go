package simsearch

import (
	"context"
	"log/slog"
	"path"
	"slices"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// Finish ends a run the same way every time, after its processes released
// what they held and stopped, and checks two invariants:
//
//   - no orphan of a live session: after Calm and settle (virtual time
//     for releases carried on in the background), no ephemeral node under
//     root belongs to a live session (Quiet);
//   - nothing left behind: once every process's session is closed and the
//     server reaped containers (two virtual minutes), every leaf under
//     root that is left matches one of the path.Match patterns in
//     durable: the service's durable state.
func (r *Run) Finish(root string, settle time.Duration, durable ...string) {
	r.Quiet(root, settle, durable...)
	r.CloseSessions()
	time.Sleep(2 * time.Minute) // containers reaped, sessions closed
	for _, n := range r.Walk(root) {
		if n.Kids > 0 {
			continue
		}
		if !matchAny(durable, n.Path) {
			r.Violate("nothing left behind", "%s is left after every process ended (owner %x, data %q)", n.Path, n.Owner, n.Data)
		}
	}
}

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if m, _ := path.Match(pat, p); m {
			return true
		}
	}
	return false
}

// Quiet stops the faults (Calm), waits settle of virtual time, and checks
// that no ephemeral node under root belongs to a live session but those
// durable matches (kept for the session's life by contract).
func (r *Run) Quiet(root string, settle time.Duration, durable ...string) {
	r.Calm()
	time.Sleep(settle)
	live := map[int64]bool{}
	for _, id := range r.srv.Sessions() {
		live[id] = true
	}
	for _, n := range r.Walk(root) {
		if n.Owner != 0 && live[n.Owner] && !matchAny(durable, n.Path) {
			r.Violate("no orphan of a live session", "%s (session %x) is left after every process released", n.Path, n.Owner)
		}
	}
}

// Node is a node Walk found.
type Node struct {
	Path  string
	Owner int64  // the session of an ephemeral node; 0 if durable
	Kids  int    // its children
	Data  string // its first 40 bytes
}

// Walk lists the nodes under root (root included, parents before their
// children, children sorted) on a session of its own; it ends the run
// (Fatalf) if it cannot connect within a virtual minute. Call it after
// Calm: a fault hides a node.
func (r *Run) Walk(root string) []Node {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := runtime.Connect(ctx, r.srv.Servers(), runtime.WithDialer(r.srv.DialerFor("walk")),
		runtime.WithLogger(slog.New(slog.DiscardHandler)), runtime.WithRandomSeed(r.SessionSeed(-2)))
	if err != nil {
		r.Fatalf("walking %s: %v", root, err)
	}
	defer s.Close()
	var out []Node
	var walk func(p string)
	walk = func(p string) {
		data, st, err := s.Conn().Get(p)
		if err != nil {
			return // gone meanwhile, or never there
		}
		kids, _, _ := s.Conn().Children(p)
		slices.Sort(kids)
		if len(data) > 40 {
			data = data[:40]
		}
		out = append(out, Node{p, st.EphemeralOwner, len(kids), string(data)})
		for _, k := range kids {
			walk(path.Join(p, k))
		}
	}
	walk(root)
	return out
}
