package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// hostList is the session's zk.HostProvider. Like go-zookeeper's default
// it resolves every configured host once, shuffles the addresses and hands
// them to the dialer in turn; it also remembers which configured host each
// address came from, for the TLS server name.
type hostList struct {
	mu    sync.Mutex
	addrs []string
	host  map[string]string // address -> configured host
	cur   int
	last  int // the address last connected to; -1 before any
}

// lookupTimeout bounds the resolution of the configured hosts.
const lookupTimeout = 3 * time.Second

// Init resolves servers ("host:port").
func (h *hostList) Init(servers []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.host = make(map[string]string)
	h.addrs = h.addrs[:0]
	for _, srv := range servers {
		host, port, err := net.SplitHostPort(srv)
		if err != nil {
			return err
		}
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return err
		}
		for _, ip := range ips {
			// A repeated address stays repeated, as in go-zookeeper's
			// provider: after a lost connection the next entry is tried
			// at once, while a round's end waits a second.
			a := net.JoinHostPort(ip, port)
			if _, dup := h.host[a]; !dup {
				h.host[a] = host
			}
			h.addrs = append(h.addrs, a)
		}
	}
	if len(h.addrs) == 0 {
		return fmt.Errorf("no addresses found for %q", servers)
	}
	rand.Shuffle(len(h.addrs), func(i, j int) { h.addrs[i], h.addrs[j] = h.addrs[j], h.addrs[i] })
	h.cur, h.last = -1, -1
	return nil
}

// Len returns the number of addresses.
func (h *hostList) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.addrs)
}

// Next returns the next address; retryStart is true when every address has
// been tried since the last successful connection.
func (h *hostList) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur = (h.cur + 1) % len(h.addrs)
	retryStart = h.cur == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.addrs[h.cur], retryStart
}

// Connected records a successful connection to the current address.
func (h *hostList) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.cur
}

// serverName returns the configured host addr was resolved from, or addr's
// host when it is unknown.
func (h *hostList) serverName(addr string) string {
	h.mu.Lock()
	host, ok := h.host[addr]
	h.mu.Unlock()
	if ok {
		return host
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
