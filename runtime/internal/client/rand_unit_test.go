package client

import (
	"log/slog"
	"testing"
)

// choices are what a session draws from its Rand: two GUIDs, back-off
// delays, and the order it tries five servers in.
func choices(t *testing.T, s *Session) []string {
	t.Helper()
	s.log, s.policy = slog.Default(), DefaultRetry
	out := []string{s.rand.NewGUID(), string(s.rand.AppendGUID(nil, false))}
	for n := 1; n <= 4; n++ {
		out = append(out, OpsOf(s).Backoff(7, n).String())
	}
	h := newHostList(s)
	if err := h.Init([]string{"127.0.0.1:1", "127.0.0.2:1", "127.0.0.3:1", "127.0.0.4:1", "127.0.0.5:1"}); err != nil {
		t.Fatal(err)
	}
	for range h.Len() {
		addr, _ := h.Next()
		out = append(out, addr)
	}
	return out
}

// WithRandomSeed's promises: the sessions of one option value draw from
// streams of their own (no GUID shared), and an option made again from
// the seed draws the same choices, session for session (a replay).
func TestRandomSeedReplaysPerSession(t *testing.T) {
	opt, again := WithRandomSeed(42), WithRandomSeed(42)
	var first, second, replay1, replay2 Session
	opt(&first)
	opt(&second)
	again(&replay1)
	again(&replay2)
	a, b := choices(t, &first), choices(t, &second)
	ra, rb := choices(t, &replay1), choices(t, &replay2)
	for i := range a {
		if a[i] != ra[i] || b[i] != rb[i] {
			t.Errorf("choice %d differs on a replay: %s/%s, then %s/%s", i, a[i], b[i], ra[i], rb[i])
		}
	}
	if a[0] == b[0] || a[1] == b[1] {
		t.Errorf("two sessions of one option drew one GUID: %s %s", a[0], b[0])
	}
	var other Session
	WithRandomSeed(43)(&other)
	if choices(t, &other)[0] == a[0] {
		t.Errorf("seeds 42 and 43 drew one GUID")
	}
	// Without the option: the system's randomness, GUIDs well formed.
	if g, h := (*Rand)(nil).NewGUID(), (*Rand)(nil).NewGUID(); g == h || len(g) != 36 || g[14] != '4' {
		t.Errorf("unseeded GUIDs %s %s", g, h)
	}
}
