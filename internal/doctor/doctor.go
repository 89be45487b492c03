// Package doctor checks, for one spec, what the ZooKeeper servers must
// allow for its handles to work (zkgen doctor): the server version,
// containers, TTL nodes (for leases), the four-letter words zkgen reads,
// the largest request and listing the spec's declared sizes make against
// jute.maxbuffer, the ACLs its resources declare, and TLS. Each check
// comes out as one Line: ok, FAIL (saying what to change), unknown (it
// could not be learned) or skipped (the spec does not need it).
//
// The checks learn by doing. Per server, over connections of their own:
// the four-letter word srvr, and handshakes for a session that does not
// exist, padded to a size, which a server answers when the size is within
// its jute.maxbuffer and drops unanswered otherwise (no session is made).
// In the tree, on one session: probe nodes named zkgen-doctor-<host>-<pid>-<n>,
// each deleted before Run returns — a container holding an ephemeral node,
// and for leases a TTL node. If the process dies first, the ephemeral node
// goes with its session, the container is then reaped by the server as an
// empty container, and the TTL node once its ten seconds are up (at the
// server's next container check). Only a death between the container's
// create and its node's leaves a container that never had a child, which
// ZooKeeper does not reap.
package doctor

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Status is the outcome of a check.
type Status string

// The outcomes. Only Fail means that something the spec needs is missing.
const (
	OK      Status = "ok"      // the servers allow what the spec needs
	Fail    Status = "FAIL"    // they do not; the line says what to change
	Unknown Status = "unknown" // it could not be learned; the line says why
	Skipped Status = "skipped" // the spec (or the flags) do not need it
)

// The checks, in the order Run reports them.
const (
	CheckConnect    = "connect"
	CheckTLS        = "tls"
	CheckVersion    = "version"
	CheckFourLetter = "4lw"
	CheckContainers = "containers"
	CheckTTL        = "ttl"
	CheckRequest    = "jute.maxbuffer"
	CheckListing    = "listing"
	CheckACL        = "acl"
)

// checks lists the checks in order.
var checks = []string{CheckConnect, CheckTLS, CheckVersion, CheckFourLetter, CheckContainers,
	CheckTTL, CheckRequest, CheckListing, CheckACL}

// Line is the outcome of one check (per server, for the checks made on
// each server, when they differ).
type Line struct {
	Status Status
	Check  string // one of the Check constants
	Text   string // what was found; for Fail, also what to change
}

// String formats the line as zkgen doctor prints it: status and check in
// columns, then the text.
func (l Line) String() string {
	return fmt.Sprintf("%-8s %-15s %s", l.Status, l.Check, l.Text)
}

// Options are the spec and the connection settings of a run.
type Options struct {
	Spec    *spec.Spec
	Servers []string      // host:port as configured, each probed on its own
	TLS     *tls.Config   // the connections' TLS settings; nil: plain
	Auth    bool          // the session has credentials (--auth)
	Timeout time.Duration // bounds each probe of a server and each probe in the tree
	// Connect opens the session the tree probes run on, with the same
	// servers, TLS settings and credentials.
	Connect func(ctx context.Context) (*runtime.Session, error)
}

// Run runs every check and returns one line per check (a check made on
// each server may give several, one per distinct outcome), in the order of
// the Check constants. It blocks until the checks are done, each bounded by
// o.Timeout; when ctx ends the checks left report unknown. Probe nodes are
// deleted and the session closed before it returns.
func Run(ctx context.Context, o Options) []Line {
	sess, err := o.Connect(ctx)
	if err != nil {
		return connectFailed(o, err)
	}
	defer sess.Close()
	lines := []Line{{OK, CheckConnect, fmt.Sprintf("session 0x%x on %s", sess.ID(), strings.Join(o.Servers, ","))}, tlsLine(o)}
	lines = append(lines, eachServer(o.Servers, func(addr string) Line { return o.versionLine(ctx, addr) })...)
	lines = append(lines, fourLetterLine())
	p := newProber(sess, o)
	lines = append(lines, p.containers(ctx), p.ttl(ctx))
	if req, ok := largestRequest(o.Spec); ok {
		lines = append(lines, eachServer(o.Servers, func(addr string) Line { return o.requestLine(ctx, addr, req) })...)
	} else {
		lines = append(lines, Line{Skipped, CheckRequest, "no declared size makes a large request (only a partitioner's plan grows with one); the application's items, payloads and values each need jute.maxbuffer above their size"})
	}
	if lst, ok := largestListing(o.Spec); ok {
		lines = append(lines, eachServer(o.Servers, func(addr string) Line { return o.listingLine(ctx, addr, lst) })...)
	} else {
		lines = append(lines, Line{Skipped, CheckListing, "no declared size bounds a listing (partitions, leases, a double barrier's size, queue buckets)"})
	}
	return append(lines, p.acls(ctx)...)
}

// Failed returns the checks of lines that failed, each once, in order.
func Failed(lines []Line) []string {
	var out []string
	for _, l := range lines {
		if l.Status == Fail && !slices.Contains(out, l.Check) {
			out = append(out, l.Check)
		}
	}
	return out
}

// connectFailed reports a session that could not be opened: a TLS
// disagreement on the tls line, anything else on the connect line, and
// every other check skipped.
func connectFailed(o Options, err error) []Line {
	lines := []Line{{Fail, CheckConnect, err.Error()}}
	if errors.Is(err, runtime.ErrTLSHandshake) {
		lines = append(lines, Line{Fail, CheckTLS, "the servers and this client do not agree on TLS: " + tlsFix(o, err)})
	} else {
		lines[0].Text += ": check --servers, and that the servers run and serve"
	}
	for _, c := range checks[len(lines):] {
		lines = append(lines, Line{Skipped, c, "no session"})
	}
	return lines
}

// tlsLine reports the TLS of a session that was established.
func tlsLine(o Options) Line {
	if o.TLS == nil {
		return Line{Skipped, CheckTLS, "no --tls-ca or --tls-cert given: a plain connection"}
	}
	text := "the session speaks TLS, the servers' certificate verified against "
	if o.TLS.RootCAs != nil {
		text += "--tls-ca"
	} else {
		text += "the system's CAs"
	}
	if len(o.TLS.Certificates) > 0 {
		text += ", a client certificate presented"
	}
	return Line{OK, CheckTLS, text}
}

// tlsFix says what to change when a session could not agree on TLS with
// the servers, from what the session found (err's text).
func tlsFix(o Options, err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "does not speak TLS"):
		return "name the servers' TLS port (their secureClientPort) in --servers, or give the servers one: secureClientPort, serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory, ssl.keyStore.location and ssl.trustStore.location"
	case strings.Contains(msg, "speaks TLS") && o.TLS == nil:
		return "that port serves TLS only: give --tls-ca (and --tls-cert/--tls-key when the servers set ssl.clientAuth=need), or name the servers' plain clientPort"
	}
	return "--tls-ca must hold the CA that signed the servers' certificate (ssl.keyStore), and the servers' ssl.trustStore the CA of --tls-cert (with ssl.clientAuth=need a client without a certificate is refused)"
}

// fourLetterLine reports the four-letter words zkgen needs: none. serve
// and inspect read everything through sessions; the runtime's TLS
// diagnosis sends srvr, whose refusal is as good an answer as its
// statistics, and doctor reads srvr, which ZooKeeper 3.8 answers whatever
// 4lw.commands.whitelist says.
func fourLetterLine() Line {
	return Line{OK, CheckFourLetter, "zkgen serve and inspect send no four-letter word, so 4lw.commands.whitelist needs none; doctor reads srvr, which ZooKeeper answers whatever the whitelist"}
}

// eachServer runs check on every server and merges the servers whose
// lines are the same into one line, the servers named before its text.
func eachServer(servers []string, check func(addr string) Line) []Line {
	var out []Line
	var who [][]string
	for _, addr := range servers {
		l := check(addr)
		i := slices.Index(out, l)
		if i < 0 {
			out, who = append(out, l), append(who, nil)
			i = len(out) - 1
		}
		who[i] = append(who[i], addr)
	}
	for i := range out {
		out[i].Text = strings.Join(who[i], ", ") + ": " + out[i].Text
	}
	return out
}
