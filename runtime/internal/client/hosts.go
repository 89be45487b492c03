package client

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ResolveFunc returns the addresses (IP addresses, without a port) of a
// configured host name, as net.Resolver.LookupHost does. ctx bounds the
// lookup.
type ResolveFunc func(ctx context.Context, host string) ([]string, error)

// WithResolver makes the session look up the configured host names with
// resolve: each time it goes round its server list, before the first
// connection attempt of the round, so that a session follows servers that
// move to new addresses. IP addresses given to Connect are used as they
// are. Default: the system resolver (net.DefaultResolver), or, with
// WithDialer, no resolution at all: the dialer is given the "host:port"
// given to Connect. With both options, the dialer is given the addresses
// resolve returns. A lookup at Connect must succeed for every host name
// (Connect fails otherwise); a later one that fails, returns nothing or
// takes over a second leaves that host's last known addresses in use.
func WithResolver(resolve ResolveFunc) Option {
	return func(s *Session) { s.resolve = resolve }
}

// hostList is the session's zk.HostProvider. It hands go-zookeeper the
// servers' addresses in turn, and looks the configured host names up again
// at the start of each round through the list: a session whose servers all
// moved reconnects as long as the ensemble keeps it (issue 42). It
// remembers which configured host each address came from, for the TLS
// server name.
type hostList struct {
	resolve ResolveFunc // nil: hosts are handed on as configured (WithDialer)
	salt    uint64      // the order of the servers (newRound)
	log     *slog.Logger
	learned []string // what an earlier session learned (withLearned): tried besides the servers given to Init

	mu        sync.Mutex
	servers   []configured   // as given to Init, or the ensemble configuration's; each with its last known addresses
	following bool           // servers are the ensemble configuration's (adopt)
	replaced  int            // counts adoptions, for relookup
	round     []hostAddr     // this round's addresses
	cur       int            // index in round of the address last handed out
	last      string         // the address last handed out
	tried     map[string]int // times each address was handed out since the last connection or retryStart
	connected bool           // Connected was called since the last Next
	served    atomic.Bool    // the connection last connected answered a request (Served)
	redialed  bool           // a lost connection's own address was let off (see roundPause)
	redialAt  int64          // when that was last done (now)
	now       func() int64   // monotonic nanoseconds: monoNow (tests set their own)
}

// roundPause is go-zookeeper's wait before a connection attempt for which
// Next says retryStart. After a connection is lost, its own address does
// not count as tried: every address, the lost one's last, is dialed once
// before the first wait, so a session on one server dials again at once.
// That is granted after every connection that answered a request, and
// otherwise once a roundPause: a connection that answered nothing after
// its handshake, lost within a roundPause of the last grant, counts its
// address as tried, so that servers which accept connections and drop
// them are not dialed in a loop. A server that serves a request before
// it drops the connection is dialed again at most once per request
// round trip; without that, an expiry found right after a reconnection
// (a session moved away from the connection that had just resynced)
// waited a second.
const roundPause = time.Second

// configured is one "host:port" given to Connect.
type configured struct {
	host, port string
	ips        []string // last known addresses; the host itself when not resolved
}

// hostAddr is an address to dial and the configured host it stands for.
type hostAddr struct{ addr, host string }

// lookupTimeout bounds the lookups at Connect; roundLookupTimeout those at
// the start of each later round. The latter is go-zookeeper's connect
// timeout: a lookup delays a reconnection no more than a failed attempt,
// and one that takes longer leaves the last known addresses in use.
const (
	lookupTimeout      = 3 * time.Second
	roundLookupTimeout = time.Second
)

// newHostList returns the host provider for s's options: WithResolver's
// lookups, none with a dialer alone, the system resolver's otherwise.
func newHostList(s *Session) *hostList {
	h := &hostList{resolve: s.resolve, salt: s.rand.Uint64(), log: s.log, learned: s.learned, tried: map[string]int{}, now: monoNow}
	if h.resolve == nil && s.dialer == nil {
		h.resolve = net.DefaultResolver.LookupHost
	}
	return h
}

// Init takes servers ("host:port"), and the learned ones not among them
// (see follow.go), and looks their hosts up. It fails only when no host
// has an address: during a rolling replacement one server's name may
// resolve to nothing for a while, or a learned name may be gone (a
// removed server's), and the others serve (a host without addresses is
// looked up again at each round).
func (h *hostList) Init(servers []string) error {
	// go-zookeeper hands the servers over shuffled by its own randomness;
	// the round's order is the session's (rank), and the lookups and their
	// errors go in one order, so that a seeded session replays.
	servers = slices.Sorted(slices.Values(servers))
	cs, err := splitServers(servers)
	if err != nil {
		return err
	}
	learned, _ := splitServers(h.learned)
	for _, l := range learned {
		if !slices.ContainsFunc(cs, func(c configured) bool { return c.host == l.host && c.port == l.port }) {
			cs = append(cs, l)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	errs := h.lookup(ctx, cs)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = cs
	h.newRound()
	if len(h.round) == 0 && len(errs) > 0 {
		return fmt.Errorf("no addresses found for %q: %w", servers, JoinErrors(errs...))
	}
	if len(h.round) == 0 {
		return fmt.Errorf("no addresses found for %q", servers)
	}
	for _, err := range errs {
		h.log.Warn("zookeeper host lookup failed; looked up again at each round", "err", err)
	}
	h.cur, h.tried = -1, map[string]int{}
	return nil
}

// splitServers splits each "host:port" of servers.
func splitServers(servers []string) ([]configured, error) {
	cs := make([]configured, 0, len(servers))
	for _, srv := range servers {
		host, port, err := net.SplitHostPort(srv)
		if err != nil {
			return nil, err
		}
		cs = append(cs, configured{host: host, port: port})
	}
	return cs, nil
}

// lookup resolves the hosts of cs that are names, all at once, and records
// each one's addresses in cs. It returns the lookups' errors, one per
// failed host; a failed host keeps the addresses it had.
func (h *hostList) lookup(ctx context.Context, cs []configured) []error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i := range cs {
		c := &cs[i]
		if _, err := netip.ParseAddr(c.host); err == nil || h.resolve == nil {
			c.ips = []string{c.host}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ips, err := h.resolve(ctx, c.host)
			if err == nil && len(ips) == 0 {
				err = fmt.Errorf("lookup %s: no addresses", c.host)
			}
			if err != nil {
				errs[i] = err
				return
			}
			c.ips = ips
		}()
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// newRound lays out a round of the current addresses. Their order is a
// random one drawn once per list (so clients spread over the servers) and
// kept from round to round, so the address just connected to comes last
// again until its round is over. A repeated address stays repeated, as in
// go-zookeeper's provider: after a lost connection the next entry is tried
// at once, while a round's end waits a second.
func (h *hostList) newRound() {
	h.round = h.round[:0]
	for _, c := range h.servers {
		for _, ip := range c.ips {
			h.round = append(h.round, hostAddr{addr: net.JoinHostPort(ip, c.port), host: c.host})
		}
	}
	slices.SortStableFunc(h.round, func(a, b hostAddr) int {
		return cmp.Compare(h.rank(a.addr), h.rank(b.addr))
	})
}

// rank is addr's place in the list's order: a hash of addr salted by the
// list's draw (the session's Rand).
func (h *hostList) rank(addr string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(addr))
	return rand.NewPCG(h.salt, f.Sum64()).Uint64()
}

// Len returns the number of addresses in the current round.
func (h *hostList) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.round)
}

// Next returns the next address, looking the hosts up again first when a
// round is over; retryStart is true when every address of the round has
// been handed out since the last connection or the last retryStart (the
// connected one counts as tried, unless it is let off after its
// connection was lost, see roundPause; a repeated address counts as tried
// once handed out as often as the round lists it). go-zookeeper then
// pauses a second before it dials. So with one server, the first dial
// after an established connection is lost goes out at once, and each
// failed one waits. An address a lookup brings in is tried before that
// pause, however many others were tried since the connection: a session
// whose server left while the others moved reaches one of them before it
// gives up on its own clock, which may be well under a second away (issue
// 42). go-zookeeper calls it from its one connecting goroutine.
func (h *hostList) Next() (server string, retryStart bool) {
	h.mu.Lock()
	over := h.cur+1 >= len(h.round)
	h.mu.Unlock()
	if over {
		h.relookup()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if over {
		h.cur = -1
	}
	if now := h.now(); h.connected && (h.served.Load() || !h.redialed || now-h.redialAt >= int64(roundPause)) {
		clear(h.tried)
		h.redialed, h.redialAt = true, now
	}
	h.connected = false
	h.served.Store(false)
	if h.allTried() {
		retryStart = true
		clear(h.tried)
	}
	h.cur++
	h.last = h.round[h.cur].addr
	h.tried[h.last]++
	return h.last, retryStart
}

// allTried reports whether every address of the round was handed out, since
// the last connection or retryStart, as many times as the round lists it.
// Called with h.mu held.
func (h *hostList) allTried() bool {
	listed := map[string]int{}
	for _, a := range h.round {
		listed[a.addr]++
	}
	for a, n := range listed {
		if h.tried[a] < n {
			return false
		}
	}
	return true
}

// relookup resolves the hosts of the list again and lays out a new round.
// A list adopted meanwhile (adopt, looked up then) is kept.
func (h *hostList) relookup() {
	h.mu.Lock()
	cs := slices.Clone(h.servers)
	replaced := h.replaced
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), roundLookupTimeout)
	defer cancel()
	for _, err := range h.lookup(ctx, cs) {
		h.log.Warn("zookeeper host lookup failed; its last known addresses stay in use", "err", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.replaced == replaced {
		h.servers = cs
	}
	h.newRound()
}

// Connected records a successful connection (a session handshake) to the
// current address.
func (h *hostList) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.tried)
	h.tried[h.last] = 1
	h.connected = true
	h.served.Store(false)
}

// Served notes that the connection last connected answered a request
// after its handshake (see roundPause). It is called for every reply, so
// it takes no lock: go-zookeeper reads no reply of a connection once it
// has called Next for the following one.
func (h *hostList) Served() {
	if h != nil && !h.served.Load() {
		h.served.Store(true)
	}
}

// serverName returns the configured host addr stands for in the current
// round, or addr's host when it is unknown.
func (h *hostList) serverName(addr string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.round {
		if a.addr == addr {
			return a.host
		}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

// adoption is what adopt did with a configuration.
type adoption int

const (
	adoptNotListed  adoption = iota // not taken: it does not name the session's server
	adoptUnresolved                 // not taken: none of its hosts could be looked up
	adoptStay                       // taken; the session's server is in it
	adoptMove                       // taken; the session's server is not
)

// adopt makes servers, the client addresses ("host:port") of an ensemble
// configuration (follow.go), the list, looked up as at the start of a
// round: if one of them is cur, the address of the session's connection,
// or a configuration was adopted before. A host whose lookup fails keeps
// the addresses it had in the list, if it was there. The new round starts
// with the next address handed out.
func (h *hostList) adopt(servers []string, cur string) adoption {
	cs, err := splitServers(servers)
	if err != nil {
		return adoptUnresolved // parseEnsembleConfig gives "host:port" only
	}
	ctx, cancel := context.WithTimeout(context.Background(), roundLookupTimeout)
	errs := h.lookup(ctx, cs)
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	resolved := false
	for i := range cs {
		if len(cs[i].ips) == 0 {
			cs[i].ips = h.known(cs[i])
		}
		resolved = resolved || len(cs[i].ips) > 0
	}
	listed := slices.ContainsFunc(cs, func(c configured) bool { return c.has(cur) })
	switch {
	case !listed && !h.following:
		return adoptNotListed
	case !resolved:
		h.log.Warn("no host of the ensemble configuration could be looked up; the session keeps its servers", "err", JoinErrors(errs...))
		return adoptUnresolved
	}
	for _, err := range errs {
		h.log.Warn("zookeeper host lookup failed; the server is tried once it resolves", "err", err)
	}
	h.servers, h.following = cs, true
	h.replaced++
	h.newRound()
	h.cur = -1
	if listed {
		return adoptStay
	}
	return adoptMove
}

// known returns the last known addresses of c's host and port in the
// list, if it is there. Called with h.mu held.
func (h *hostList) known(c configured) []string {
	for _, k := range h.servers {
		if k.host == c.host && k.port == c.port {
			return k.ips
		}
	}
	return nil
}

// has reports whether addr is one of c's addresses.
func (c configured) has(addr string) bool {
	for _, ip := range c.ips {
		if net.JoinHostPort(ip, c.port) == addr {
			return true
		}
	}
	return false
}

// lists reports whether addr is in the current round.
func (h *hostList) lists(addr string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(h.round, func(a hostAddr) bool { return a.addr == addr })
}

// learnedServers returns what a later session of Supervise should try
// besides the servers given to it: the ensemble configuration's servers
// ("host:port") once one was adopted, or else what this list learned
// itself.
func (h *hostList) learnedServers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.following {
		return slices.Clone(h.learned)
	}
	out := make([]string, len(h.servers))
	for i, c := range h.servers {
		out[i] = net.JoinHostPort(c.host, c.port)
	}
	return out
}
