package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// Request opcodes of the ZooKeeper client protocol, as carried in the header
// of every client-to-server frame after the ConnectRequest. Pass them to
// Proxy.CutAfterRequest.
const (
	OpCreate               int32 = 1
	OpDelete               int32 = 2
	OpExists               int32 = 3
	OpGetData              int32 = 4
	OpSetData              int32 = 5
	OpGetACL               int32 = 6
	OpSetACL               int32 = 7
	OpGetChildren          int32 = 8
	OpSync                 int32 = 9
	OpPing                 int32 = 11
	OpGetChildren2         int32 = 12
	OpCheck                int32 = 13
	OpMulti                int32 = 14
	OpCreate2              int32 = 15
	OpReconfig             int32 = 16
	OpCheckWatches         int32 = 17
	OpRemoveWatches        int32 = 18
	OpCreateContainer      int32 = 19
	OpDeleteContainer      int32 = 20
	OpCreateTTL            int32 = 21
	OpMultiRead            int32 = 22
	OpAuth                 int32 = 100
	OpSetWatches           int32 = 101
	OpSasl                 int32 = 102
	OpGetEphemerals        int32 = 103
	OpGetAllChildrenNumber int32 = 104
	OpSetWatches2          int32 = 105
	OpAddWatch             int32 = 106
	OpWhoAmI               int32 = 107
	OpCloseSession         int32 = -11
)

// maxFrame bounds the frames the harness accepts. ZooKeeper's own default
// limit (jute.maxbuffer) is about 1 MiB.
const maxFrame = 64 << 20

// Session is a ZooKeeper session's credentials, as granted by the server in
// its ConnectResponse.
type Session struct {
	ID      int64
	Passwd  []byte
	Timeout time.Duration // as negotiated by the server
}

// ErrInvalidSession is returned by CloseSession when the server refuses to
// reattach the session: it has expired already, or the password is wrong.
var ErrInvalidSession = errors.New("zktest: session is expired or its password is wrong")

// takenBack reports whether err is the server closing a connection of
// CloseSession's: the session's own client, which dials another server of
// an ensemble at once when its connection is dropped, attached to the
// session again first. Its next attachment to that server waits a
// second, so an attempt made again wins.
func takenBack(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// ExpireSession forces the expiry of an existing session, the standard way:
// it attaches a second connection to the session (same id and password),
// which makes the server drop the original client's connection, and then
// closes the session from that connection. When the original client
// reconnects, the server tells it the session has expired. Ephemeral nodes
// of the session are gone when ExpireSession returns.
//
// go-zookeeper's Conn exposes SessionID but not the password; a Proxy
// records both for every session established through it (see
// Proxy.Session). The servers are tried in order, each up to three times
// while the session's own client takes the session back (see takenBack);
// the test fails if none closes the session.
func ExpireSession(tb testing.TB, servers []string, sessionID int64, passwd []byte) {
	tb.Helper()
	var errs []error
	for _, addr := range servers {
		err := CloseSession(addr, sessionID, passwd, 10*time.Second)
		for try := 1; try < 3 && takenBack(err); try++ {
			err = CloseSession(addr, sessionID, passwd, 10*time.Second)
			if errors.Is(err, ErrInvalidSession) {
				return // the attempt cut short had closed it
			}
		}
		if err == nil {
			return
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if errors.Is(err, ErrInvalidSession) {
			break // every server shares the session table: no point going on
		}
	}
	tb.Fatalf("zktest: expiring session 0x%x: %v", sessionID, errors.Join(errs...))
}

// CloseSession attaches to the session with the given id and password on the
// server at addr and closes it, as ExpireSession does, within timeout. It
// returns ErrInvalidSession if the server does not accept the session.
func CloseSession(addr string, sessionID int64, passwd []byte, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}

	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId,
	// passwd (length-prefixed), readOnly.
	req := make([]byte, 0, 64)
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(timeout.Milliseconds()))
	req = binary.BigEndian.AppendUint64(req, uint64(sessionID))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	req = append(req, 0)
	if err := writeFrame(c, req); err != nil {
		return err
	}
	resp, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("zktest: reading ConnectResponse: %w", err)
	}
	sess, err := parseConnectResponse(resp)
	if err != nil {
		return err
	}
	if sess.ID == 0 || sess.Timeout <= 0 {
		return ErrInvalidSession
	}

	return sendCloseSession(c)
}

// sendCloseSession sends closeSession (a request header only) on c, a
// connection attached to the session, and waits for its reply.
func sendCloseSession(c net.Conn) error {
	const xid = 1
	req := binary.BigEndian.AppendUint32(nil, xid)
	op := OpCloseSession
	req = binary.BigEndian.AppendUint32(req, uint32(op))
	if err := writeFrame(c, req); err != nil {
		return err
	}
	for {
		resp, err := readFrame(c)
		if err != nil {
			return fmt.Errorf("zktest: reading closeSession reply: %w", err)
		}
		// ReplyHeader: xid, zxid, err.
		if len(resp) < 16 {
			return fmt.Errorf("zktest: short reply (%d bytes)", len(resp))
		}
		if int32(binary.BigEndian.Uint32(resp)) != xid {
			continue // a watch event or the like
		}
		if code := int32(binary.BigEndian.Uint32(resp[12:])); code != 0 {
			return fmt.Errorf("zktest: closeSession failed with ZooKeeper error %d", code)
		}
		return nil
	}
}

// parseConnectResponse decodes protocolVersion, timeOut, sessionId and
// passwd.
func parseConnectResponse(b []byte) (Session, error) {
	if len(b) < 20 {
		return Session{}, fmt.Errorf("zktest: short ConnectResponse (%d bytes)", len(b))
	}
	s := Session{
		Timeout: time.Duration(int32(binary.BigEndian.Uint32(b[4:]))) * time.Millisecond,
		ID:      int64(binary.BigEndian.Uint64(b[8:])),
	}
	n := int32(binary.BigEndian.Uint32(b[16:]))
	if n > 0 {
		if int(n) > len(b)-20 {
			return Session{}, fmt.Errorf("zktest: ConnectResponse password overruns the frame")
		}
		s.Passwd = append([]byte(nil), b[20:20+n]...)
	}
	return s, nil
}

func writeFrame(w io.Writer, payload []byte) error {
	buf := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	_, err := w.Write(buf)
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || n > maxFrame {
		return nil, fmt.Errorf("zktest: frame length %d out of range", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}
