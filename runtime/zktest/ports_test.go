package zktest

import "testing"

// Free ports come from outside the kernel's ephemeral range (where a port
// found free can be taken by any outgoing connection before a server binds
// it), on a system that says what that range is.
func TestFreePortsOutsideEphemeralRange(t *testing.T) {
	lo, hi := quietPorts()
	if lo == hi {
		t.Skip("the ephemeral port range is unknown here")
	}
	ports, err := freePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= hi || seen[p] {
			t.Fatalf("port %d: want distinct ports in [%d, %d)", p, lo, hi)
		}
		seen[p] = true
	}
}
