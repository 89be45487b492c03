package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
)

// The host list hands out every resolved address once per round, says when
// a round starts again without a connection, and maps each address back to
// the host it was configured as.
func TestHostsRoundsAndNames(t *testing.T) {
	h := newHostList(&Session{log: slog.Default()})
	if err := h.Init([]string{"localhost:2181", "127.0.0.1:2182", "127.0.0.2:2182"}); err != nil {
		t.Fatal(err)
	}
	if got := h.serverName("127.0.0.1:2181"); got != "localhost" {
		t.Errorf("serverName(127.0.0.1:2181) = %q, want localhost (the configured host)", got)
	}
	if got := h.serverName("127.0.0.1:2182"); got != "127.0.0.1" {
		t.Errorf("serverName(127.0.0.1:2182) = %q", got)
	}
	if got := h.serverName("10.0.0.9:1"); got != "10.0.0.9" {
		t.Errorf("serverName of an unknown address = %q", got)
	}
	n := h.Len()
	if n < 3 {
		t.Fatalf("Len = %d, want at least 3", n)
	}
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		a, retry := h.Next()
		if retry {
			t.Fatalf("retryStart within the first round, at %d", i)
		}
		seen[a] = true
	}
	if len(seen) != n {
		t.Fatalf("first round gave %d distinct addresses of %d", len(seen), n)
	}
	if _, retry := h.Next(); !retry {
		t.Fatal("no retryStart after a round without a connection")
	}
	h.Connected()
	for i := 0; i < n; i++ {
		if _, retry := h.Next(); retry {
			t.Fatalf("retryStart %d addresses after a connection", i+1)
		}
	}
	if _, retry := h.Next(); !retry {
		t.Fatal("no retryStart after a round past the connected address")
	}
	// A repeated address stays repeated (tests route a session through one
	// proxy listed twice, so that a reconnection does not wait a round).
	if err := h.Init([]string{"127.0.0.1:1", "127.0.0.1:1"}); err != nil || h.Len() != 2 {
		t.Fatalf("Init with a repeated address: Len %d, %v; want 2", h.Len(), err)
	}
	if err := h.Init([]string{"no-port"}); err == nil {
		t.Fatal("Init accepted a server without a port")
	}
}

// After a connection is lost, the first dial goes out without
// go-zookeeper's wait (its connect loop sleeps a second before a dial for
// which Next says retryStart), with one server and with several: every
// address, the lost one's last, is dialed once before the first wait.
// Failed dials still wait between rounds. The wait is skipped once a
// second: a connection lost again within a second of the last skip counts
// its address as tried, so a server that drops every connection is not
// dialed in a loop.
func TestHostsRedialAtOnceAfterALostConnection(t *testing.T) {
	for _, servers := range [][]string{{"127.0.0.1:2181"}, {"127.0.0.1:2181", "127.0.0.2:2181", "127.0.0.3:2181"}} {
		h, clock := clockedHosts(t, servers)
		n := h.Len()
		lost, _ := h.Next()
		h.Connected()
		// Lost: n dials at once, the last to the lost server, then a
		// wait before each round of failed dials.
		got, want := dialsOf(h, 3*n), waitsAfter(n, n, 3*n)
		if !slices.Equal(waitsOf(got), want) || got[n-1].addr != lost {
			t.Errorf("%d servers, after a lost connection: dials %v; want waits %v, dial %d to %s", n, got, want, n, lost)
		}
		// Lost again at once: its own address waits its round.
		h.Connected()
		if got, want := dialsOf(h, n), waitsAfter(n-1, n, n); !slices.Equal(waitsOf(got), want) {
			t.Errorf("%d servers, a connection lost again at once: dials %v; want waits %v", n, got, want)
		}
		// A second later, a lost connection is dialed again at once.
		*clock += int64(roundPause)
		h.Connected()
		if got, want := dialsOf(h, 2*n), waitsAfter(n, n, 2*n); !slices.Equal(waitsOf(got), want) {
			t.Errorf("%d servers, a connection lost a second later: dials %v; want waits %v", n, got, want)
		}
	}
}

// A connection that answered a request after its handshake is dialed
// again at once when lost, however soon after the last such redial: the
// server served, so this is no loop of connections dropped on arrival.
// One that answered nothing, lost as soon, still waits its round.
func TestHostsRedialAtOnceAfterAServedConnection(t *testing.T) {
	for _, servers := range [][]string{{"127.0.0.1:2181"}, {"127.0.0.1:2181", "127.0.0.2:2181", "127.0.0.3:2181"}} {
		h, _ := clockedHosts(t, servers)
		n := h.Len()
		h.Next()
		h.Connected()
		h.Served()
		dialsOf(h, n) // lost: the first redial at once
		for k := range 3 {
			h.Connected()
			h.Served()
			if got, want := dialsOf(h, n), waitsAfter(n, n, n); !slices.Equal(waitsOf(got), want) {
				t.Errorf("%d servers, served connection %d lost at once: dials %v; want waits %v", n, k+2, got, want)
			}
		}
		h.Connected() // answers nothing
		if got, want := dialsOf(h, n), waitsAfter(n-1, n, n); !slices.Equal(waitsOf(got), want) {
			t.Errorf("%d servers, a connection that served nothing lost at once: dials %v; want waits %v", n, got, want)
		}
		// A reply of the last connection does not count for the next.
		h.Served()
		h.Connected()
		if got, want := dialsOf(h, n), waitsAfter(n-1, n, n); !slices.Equal(waitsOf(got), want) {
			t.Errorf("%d servers, the earlier connection's reply counted for the next: dials %v; want waits %v", n, got, want)
		}
	}
}

// clockedHosts returns a host list of servers whose clock stands still
// until the test moves it.
func clockedHosts(t *testing.T, servers []string) (*hostList, *int64) {
	t.Helper()
	h := newHostList(&Session{log: slog.Default()})
	clock := new(int64)
	h.now = func() int64 { return *clock }
	if err := h.Init(servers); err != nil {
		t.Fatal(err)
	}
	return h, clock
}

// attempt is one connection attempt go-zookeeper makes: the address, and
// whether its connect loop slept before it.
type attempt struct {
	addr string
	wait bool
}

// dialsOf returns the next k dials of h, all failing, as go-zookeeper's
// connect loop makes them.
func dialsOf(h *hostList, k int) []attempt {
	out := make([]attempt, k)
	for i := range out {
		out[i].addr, out[i].wait = h.Next()
	}
	return out
}

// waitsOf returns whether each dial of ds waited.
func waitsOf(ds []attempt) []bool {
	out := make([]bool, len(ds))
	for i, d := range ds {
		out[i] = d.wait
	}
	return out
}

// waitsAfter returns the waits of k failing dials in rounds of n
// addresses, the first wait before dial number first (from 0).
func waitsAfter(first, n, k int) []bool {
	out := make([]bool, k)
	for i := first; i < k; i += n {
		out[i] = true
	}
	return out
}

// fakeDNS is a resolver the test controls: names map to addresses, or to
// an error; it counts its lookups.
type fakeDNS struct {
	mu      sync.Mutex
	names   map[string][]string
	fail    error
	lookups int
}

func (d *fakeDNS) set(name string, ips ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.names[name] = ips
}

func (d *fakeDNS) failWith(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = err
}

func (d *fakeDNS) lookupHost(_ context.Context, host string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups++
	if d.fail != nil {
		return nil, d.fail
	}
	ips, ok := d.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return slices.Clone(ips), nil
}

// A host name is looked up again at the start of each round through the
// list, not before: a server that moved is found at its new address, with
// the configured name for TLS. A failed lookup keeps the last known
// addresses; an IP address is never looked up.
func TestHostsLookedUpEachRound(t *testing.T) {
	dns := &fakeDNS{names: map[string][]string{"zk.test": {"10.0.0.1"}}}
	h := newHostList(&Session{log: slog.Default(), resolve: dns.lookupHost})
	if err := h.Init([]string{"zk.test:2181", "10.9.9.9:2182"}); err != nil {
		t.Fatal(err)
	}
	if dns.lookups != 1 {
		t.Fatalf("%d lookups at Init, want 1 (the IP address is not looked up)", dns.lookups)
	}
	round := func(n int) []string { return roundOf(h, n) } // the next round, of n addresses
	if got := round(2); !slices.Equal(got, []string{"10.0.0.1:2181", "10.9.9.9:2182"}) {
		t.Fatalf("first round %v", got)
	}
	dns.set("zk.test", "10.0.0.2", "10.0.0.3")
	if got := round(3); !slices.Equal(got, []string{"10.0.0.2:2181", "10.0.0.3:2181", "10.9.9.9:2182"}) {
		t.Fatalf("round after the name moved: %v", got)
	}
	if dns.lookups != 2 {
		t.Fatalf("%d lookups after two rounds, want 2 (one per round)", dns.lookups)
	}
	if got := h.serverName("10.0.0.3:2181"); got != "zk.test" {
		t.Errorf("serverName of a moved address = %q, want zk.test", got)
	}
	dns.failWith(errors.New("resolver down"))
	if got := round(3); !slices.Equal(got, []string{"10.0.0.2:2181", "10.0.0.3:2181", "10.9.9.9:2182"}) {
		t.Fatalf("round after a failed lookup: %v, want the last known addresses", got)
	}
	if err := h.Init([]string{"zk.test:2181"}); err == nil {
		t.Fatal("Init succeeded with a failing lookup")
	}
}

// A dialer alone is given the configured "host:port", host names
// included, with no lookup on the way (issue 46); with a resolver too, it
// is given the resolved addresses.
func TestDialerGetsHostName(t *testing.T) {
	dialled := func(opts ...Option) string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := make(chan string, 1)
		dial := func(_ context.Context, _, addr string) (net.Conn, error) {
			select {
			case got <- addr:
			default: // a later attempt, before Connect saw the cancellation
			}
			cancel() // one attempt is all the test needs
			return nil, errors.New("no server here")
		}
		_, err := Connect(ctx, []string{"x:1"}, append(opts, WithDialer(dial), WithLogger(slog.New(slog.DiscardHandler)))...)
		var de *net.DNSError
		if !errors.Is(err, context.Canceled) || errors.As(err, &de) {
			t.Fatalf("Connect = %v, want the test's cancellation", err)
		}
		return <-got
	}
	if got := dialled(); got != "x:1" {
		t.Errorf("the dialer was given %q, want x:1", got)
	}
	dns := &fakeDNS{names: map[string][]string{"x": {"127.0.0.7"}}}
	if got := dialled(WithResolver(dns.lookupHost)); got != "127.0.0.7:1" {
		t.Errorf("with a resolver, the dialer was given %q, want 127.0.0.7:1", got)
	}
}

// A name that does not resolve at Connect does not fail it while another
// host has addresses (a server being replaced has no record for a while);
// it is looked up again at the next round, and is in it once it
// resolves. With no host resolving, Init fails with the lookups' errors.
func TestHostsInitWithAnUnresolvedName(t *testing.T) {
	var mu sync.Mutex
	known := map[string][]string{"zk0": {"127.0.0.10"}}
	resolve := func(_ context.Context, host string) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		if ips, ok := known[host]; ok {
			return ips, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	h := newHostList(&Session{log: slog.Default(), resolve: resolve})
	if err := h.Init([]string{"zk0:2181", "zk1:2181"}); err != nil {
		t.Fatalf("Init with one name resolving: %v", err)
	}
	if a, _ := h.Next(); a != "127.0.0.10:2181" || h.Len() != 1 {
		t.Fatalf("round of %d, first %s; want zk0's address only", h.Len(), a)
	}
	mu.Lock()
	known["zk1"] = []string{"127.0.0.11"}
	mu.Unlock()
	h.relookup()
	if h.Len() != 2 {
		t.Fatalf("after zk1 resolves, a round of %d addresses, want 2", h.Len())
	}
	var dns *net.DNSError
	if err := h.Init([]string{"zk8:2181", "zk9:2181"}); err == nil || !errors.As(err, &dns) {
		t.Fatalf("Init with no name resolving = %v, want the lookups' errors", err)
	}
}

// The pause before a new try of the list (retryStart: go-zookeeper waits
// a second) comes only once every address the session knows has been
// tried since its connection, the ones a round's lookup brought in
// included. A session whose server left while the others moved (a
// rolling replacement) tries their new addresses before that pause: the
// session gives up on its own clock at 35% of its timeout after it last
// heard from the server, which may be less than a second away. Each salt
// (the list's order) is checked, the connected server being first,
// second or last in its round.
func TestHostsNewAddressesBeforeThePause(t *testing.T) {
	for seed := range uint64(12) {
		dns := &fakeDNS{names: map[string][]string{"zk0": {"10.0.0.1"}, "zk1": {"10.0.0.2"}, "zk2": {"10.0.0.3"}}}
		h := newHostList(&Session{log: slog.New(slog.DiscardHandler), resolve: dns.lookupHost, rand: newRand(seed, 1)})
		if err := h.Init([]string{"zk0:2181", "zk1:2181", "zk2:2181"}); err != nil {
			t.Fatal(err)
		}
		for range seed % 3 { // connect at the first, second or third of the round
			h.Next()
		}
		on, _ := h.Next()
		h.Connected()
		moved := map[string]bool{}
		for i, name := range []string{"zk0", "zk1", "zk2"} {
			if on == fmt.Sprintf("10.0.0.%d:2181", i+1) {
				dns.set(name) // the connected server left: its name resolves to nothing
				continue
			}
			dns.set(name, fmt.Sprintf("10.0.1.%d", i+1)) // the others joined again elsewhere
			moved[fmt.Sprintf("10.0.1.%d:2181", i+1)] = true
		}
		var before []string
		for range 10 {
			a, retry := h.Next()
			if retry {
				break
			}
			before = append(before, a)
		}
		for a := range moved {
			if !slices.Contains(before, a) {
				t.Errorf("seed %d: connected at %s, tried %v before the pause: not %s, where a server moved", seed, on, before, a)
			}
		}
	}
}
