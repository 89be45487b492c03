package zktest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer accepts connections and echoes them until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func startRelay(t *testing.T, target string, hello func(io.Reader) ([]byte, error)) *relay {
	t.Helper()
	r, err := listenRelay()
	if err != nil {
		t.Fatal(err)
	}
	r.start(target, hello)
	t.Cleanup(r.close)
	return r
}

// roundTrip writes msg and reads it back, within a generous deadline.
func roundTrip(c net.Conn, msg string) error {
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != msg {
		return errors.New("echoed " + string(got))
	}
	return nil
}

func TestRelayCut(t *testing.T) {
	r := startRelay(t, echoServer(t), nil)
	live, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := roundTrip(live, "before"); err != nil {
		t.Fatalf("through the relay: %v", err)
	}

	r.setCut(true)
	if !r.isCut() {
		t.Fatal("isCut false after setCut(true)")
	}
	// The live connection was closed: reading ends without any data.
	if err := live.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := live.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("live connection after the cut: read %d bytes, %v; want it closed", n, err)
	}
	// A new one is accepted and reset before it reaches the target.
	cut, err := net.Dial("tcp", r.addr())
	if err == nil {
		if err := roundTrip(cut, "during"); err == nil {
			t.Fatal("a connection made while cut reached the target")
		}
		cut.Close()
	}

	r.setCut(false)
	again, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := roundTrip(again, "after"); err != nil {
		t.Fatalf("after healing: %v", err)
	}
}

func TestRelayTargetNotYetListening(t *testing.T) {
	// A port that nothing listens on, until the relay has a connection for it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()
	r := startRelay(t, target, nil)
	c, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "early"); err != nil {
		t.Fatal(err)
	}
	ln, err = net.Listen("tcp", target)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer ln.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := make([]byte, 5)
	if _, err := io.ReadFull(s, got); err != nil || string(got) != "early" {
		t.Fatalf("target read %q, %v", got, err)
	}
}

// hello builds an election connection's initial message.
func hello(version, sid int64, addr string) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(version))
	b = binary.BigEndian.AppendUint64(b, uint64(sid))
	b = binary.BigEndian.AppendUint32(b, uint32(len(addr)))
	return append(b, addr...)
}

func TestAdvertiseAs(t *testing.T) {
	rewrite := advertiseAs("127.0.0.1:4000")
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte // nil: an error
	}{
		{"v1", hello(electionProtocolV1, 3, "127.0.0.1:3888"), hello(electionProtocolV1, 3, "127.0.0.1:4000")},
		{"v2", hello(electionProtocolV2, 2, "127.0.0.1:3888|127.0.0.2:3888"), hello(electionProtocolV2, 2, "127.0.0.1:4000")},
		{"sid only", binary.BigEndian.AppendUint64(nil, 7), binary.BigEndian.AppendUint64(nil, 7)},
		{"unknown version", hello(-65534, 1, "127.0.0.1:3888"), nil},
		{"empty address", hello(electionProtocolV1, 1, ""), nil},
		{"short", hello(electionProtocolV1, 1, "127.0.0.1:3888")[:25], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What follows the message is left unread, for the relay to copy.
			rd := bytes.NewReader(append(append([]byte(nil), tc.in...), "next"...))
			got, err := rewrite(rd)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("rewrote %q to %q; want an error", tc.in, got)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("rewrite = %q, %v; want %q", got, err, tc.want)
			}
			if rest, _ := io.ReadAll(rd); string(rest) != "next" {
				t.Fatalf("left %q unread; want %q", rest, "next")
			}
		})
	}
}

func TestRelayRewritesHello(t *testing.T) {
	r := startRelay(t, echoServer(t), advertiseAs("127.0.0.1:4000"))
	c, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append(hello(electionProtocolV1, 1, "127.0.0.1:3888"), "vote"...)); err != nil {
		t.Fatal(err)
	}
	want := append(hello(electionProtocolV1, 1, "127.0.0.1:4000"), "vote"...)
	got := make([]byte, len(want))
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("target saw %q, %v; want %q", got, err, want)
	}
}
