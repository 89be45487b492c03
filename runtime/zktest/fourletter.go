package zktest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// FourLetter sends a four-letter-word command (ruok, srvr, stat, mntr, cons,
// wchs, wchp, wchc, dump, conf, envi, isro, ...) to the server at addr and
// returns its whole answer. The exchange, including connecting, is bounded
// by timeout. Servers started by this package allow every command, unless
// started WithFourLetterWords.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("zktest: four-letter command %q is not four letters", cmd)
	}
	deadline := time.Now().Add(timeout)
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", cmd, addr, err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		return string(out), fmt.Errorf("zktest: %s to %s: %w", cmd, addr, err)
	}
	return string(out), nil
}

// ErrNotServing is returned by Mode when the server answers but does not
// serve requests, as a quorum member without a quorum.
var ErrNotServing = errors.New("zktest: server is not currently serving requests")

// Mode returns the server's role from the "Mode:" line of its srvr answer:
// "standalone", "leader", "follower" or "observer". It returns ErrNotServing
// when the server is up but not serving.
func Mode(addr string, timeout time.Duration) (string, error) {
	out, err := FourLetter(addr, "srvr", timeout)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode:"); ok {
			return strings.TrimSpace(m), nil
		}
	}
	if strings.Contains(out, "not currently serving") {
		return "", ErrNotServing
	}
	return "", fmt.Errorf("zktest: no Mode in srvr answer from %s: %q", addr, out)
}
