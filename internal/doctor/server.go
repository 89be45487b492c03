package doctor

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// dial opens a connection of its own to addr, over TLS when the options
// say so (verifying addr's host name), bounded by ctx.
func (o Options) dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		if err := c.SetDeadline(dl); err != nil {
			c.Close()
			return nil, err
		}
	}
	if o.TLS == nil {
		return c, nil
	}
	cfg := o.TLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// fourLetter sends word to the server at addr and returns its answer,
// within o.Timeout.
func (o Options) fourLetter(ctx context.Context, addr, word string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c, err := o.dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	out, err := io.ReadAll(c)
	return string(out), err
}

// version is a ZooKeeper version: major, minor, patch.
type version [3]int

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// atLeast reports whether v is w or later.
func (v version) atLeast(w version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] > w[i]
		}
	}
	return true
}

// The versions the checks know: containers and TTL nodes came in 3.5.3,
// persistent (recursive) watches, addWatch, in 3.6.0.
var (
	minVersion      = version{3, 5, 3}
	addWatchVersion = version{3, 6, 0}
)

var versionLine = regexp.MustCompile(`(?m)^Zookeeper version: (\d+)\.(\d+)\.(\d+)`)

// parseVersion reads the version from srvr's answer.
func parseVersion(srvr string) (version, bool) {
	m := versionLine.FindStringSubmatch(srvr)
	if m == nil {
		return version{}, false
	}
	var v version
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

// versionLine asks the server at addr its version (srvr) and judges it.
func (o Options) versionLine(ctx context.Context, addr string) Line {
	out, err := o.fourLetter(ctx, addr, "srvr")
	if err != nil {
		return Line{Unknown, CheckVersion, "srvr: " + err.Error()}
	}
	v, ok := parseVersion(out)
	if !ok {
		first, _, _ := strings.Cut(out, "\n")
		return Line{Unknown, CheckVersion, fmt.Sprintf("srvr answered %q, with no version", first)}
	}
	return judgeVersion(v)
}

// judgeVersion says whether v has what zkgen uses: containers and TTL
// nodes (3.5.3). addWatch (3.6) is reported, not needed: neither the
// client nor serve's model uses it.
func judgeVersion(v version) Line {
	if !v.atLeast(minVersion) {
		return Line{Fail, CheckVersion, fmt.Sprintf("ZooKeeper %s: zkgen's recipes create containers and TTL nodes, which need %s or later: upgrade the servers (zkgen is tested on 3.8)", v, minVersion)}
	}
	watches := "persistent recursive watches (addWatch, 3.6) available, though zkgen does not use them"
	if !v.atLeast(addWatchVersion) {
		watches = "no persistent recursive watches (addWatch, 3.6), which zkgen does not use"
	}
	return Line{OK, CheckVersion, fmt.Sprintf("ZooKeeper %s (zkgen needs %s or later); %s", v, minVersion, watches)}
}

// handshakeSize is the smallest probe: a ConnectRequest with a 16-byte
// password and the read-only flag, after its length.
const handshakeSize = 4 + 8 + 4 + 8 + 4 + 16 + 1

// probeSession is the session id of the probes' handshakes: no server
// hands it out (ids carry the server id and a clock reading), and with a
// password of zeros the handshake is refused even so.
const probeSession = 1

// handshake is a ConnectRequest frame for probeSession whose length says
// n (at least handshakeSize): its fields, then zeros.
func handshake(n int) []byte {
	b := make([]byte, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	r := b[4:4]
	r = binary.BigEndian.AppendUint32(r, 0)     // protocol version
	r = binary.BigEndian.AppendUint64(r, 0)     // last zxid seen
	r = binary.BigEndian.AppendUint32(r, 30000) // session timeout, ms
	r = binary.BigEndian.AppendUint64(r, probeSession)
	binary.BigEndian.AppendUint32(r, 16) // password length; password, read-only flag and padding are zeros
	return b
}

// errRefused is what takes reports for a frame the server dropped unread.
var errRefused = errors.New("closed the connection without an answer")

// takes sends the server at addr a handshake frame of n bytes (counted as
// ZooKeeper counts them, after the length) and reports whether it was
// answered: nil when it was, errRefused when the server closed the
// connection without an answer, as ZooKeeper does when n is over its
// jute.maxbuffer, another error when it cannot tell.
func (o Options) takes(ctx context.Context, addr string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c, err := o.dial(ctx, addr)
	if err != nil {
		return err
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		c.Write(handshake(n)) // a refusal cuts it short; the answer decides
	}()
	var hdr [4]byte
	_, err = io.ReadFull(c, hdr[:])
	c.Close()
	<-wrote
	var ne net.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("no answer within %v", o.Timeout)
	}
	return errRefused
}

// takesLine probes whether the server at addr takes a frame of n bytes,
// first checking that it answers the smallest one (so that a refusal is
// the size's doing). When it cannot tell, it returns the line that says
// why.
func (o Options) takesLine(ctx context.Context, addr, check string, n int) (bool, *Line) {
	if err := o.takes(ctx, addr, handshakeSize); err != nil {
		return false, &Line{Unknown, check, "the server does not answer a connection handshake: " + err.Error()}
	}
	err := o.takes(ctx, addr, max(n, handshakeSize))
	if err != nil && !errors.Is(err, errRefused) {
		return false, &Line{Unknown, check, err.Error()}
	}
	return err == nil, nil
}

// requestLine judges the largest request the spec makes against the
// server's jute.maxbuffer.
func (o Options) requestLine(ctx context.Context, addr string, req need) Line {
	ok, unknown := o.takesLine(ctx, addr, CheckRequest, req.bytes)
	switch {
	case unknown != nil:
		return *unknown
	case ok:
		return Line{OK, CheckRequest, fmt.Sprintf("takes a request of %s, the largest the spec's sizes make: %s", size(req.bytes), req.what)}
	}
	return Line{Fail, CheckRequest, fmt.Sprintf("refuses a request of %s (the connection is dropped), the largest the spec's sizes make: %s; set -Djute.maxbuffer=%d or more on every server (SERVER_JVMFLAGS) and restart them one at a time",
		size(req.bytes), req.what, suggest(req.bytes))}
}

// listingLine reports the largest listing the spec's sizes allow against
// the server's jute.maxbuffer. ZooKeeper applies jute.maxbuffer to what
// it reads, not to what it sends: zkgen reads a listing of any size, and
// only a Java client reading the same directory needs its own
// jute.maxbuffer above it. So a listing over the server's limit is no
// failure; the line says who needs what.
func (o Options) listingLine(ctx context.Context, addr string, lst need) Line {
	ok, unknown := o.takesLine(ctx, addr, CheckListing, lst.bytes)
	switch {
	case unknown != nil:
		return *unknown
	case ok:
		return Line{OK, CheckListing, fmt.Sprintf("the largest listing the spec's sizes allow, %s, is within jute.maxbuffer: %s", size(lst.bytes), lst.what)}
	}
	return Line{OK, CheckListing, fmt.Sprintf("the largest listing the spec's sizes allow, %s, is over jute.maxbuffer, which limits what the server reads, not what it sends: zkgen reads it; a Java client reading it (Curator, zkCli.sh) needs -Djute.maxbuffer=%d or more: %s",
		size(lst.bytes), suggest(lst.bytes), lst.what)}
}

// suggest is a jute.maxbuffer to propose for frames of n bytes:
// ZooKeeper's default (0xfffff) when that holds them, else n rounded up to
// the next MiB.
func suggest(n int) int {
	const dflt = 0xfffff
	if n <= dflt {
		return dflt
	}
	return (n>>20 + 1) << 20
}

// size formats a byte count for people: bytes, KiB or MiB.
func size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
