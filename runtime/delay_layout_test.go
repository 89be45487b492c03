package runtime

import (
	"slices"
	"testing"
	"time"
)

// Delay queue item names carry their due time: they parse back, sort by due
// time then sequence number (wrap-safe), and the due time is rounded up to
// the millisecond (never earlier than asked) and clamped to what the name
// holds.
func TestDelayItemNames(t *testing.T) {
	for _, due := range []int64{0, 1, 1763872345678, maxDue} {
		name := delayItemPrefix(due) + "0000000042"
		it, ok := parseItem(name)
		if !ok || it.due != due || it.seq != 42 || it.prio != 0 || it.hasIn {
			t.Errorf("parseItem(%q) = %+v, %v", name, it, ok)
		}
	}
	for _, bad := range []string{"item-d12-0000000001", "item-dxxxxxxxxxxxxxxx-0000000001", "item-d000000000000001x0000000001"} {
		if it, ok := parseItem(bad); ok {
			t.Errorf("parseItem(%q) = %+v, want refused", bad, it)
		}
	}
	names := []string{
		delayItemPrefix(500) + "0000000001",
		delayItemPrefix(200) + "0000000003",
		delayItemPrefix(200) + "0000000002",
		delayItemPrefix(100) + "-000000001", // wrapped: put after 2147483647
		delayItemPrefix(100) + "2147483647",
		delayItemPrefix(-5) + "0000000009", // clamped to 0
	}
	var got []string
	for _, it := range sortItems(names) {
		got = append(got, it.name)
	}
	want := []string{names[5], names[4], names[3], names[2], names[1], names[0]}
	if !slices.Equal(got, want) {
		t.Errorf("sortItems =\n%v\nwant\n%v", got, want)
	}
	at := time.UnixMilli(1763872345678)
	for _, tc := range []struct {
		t    time.Time
		want int64
	}{
		{at, 1763872345678},
		{at.Add(time.Nanosecond), 1763872345679},
		{at.Add(999 * time.Microsecond), 1763872345679},
		{time.Unix(-10, 0), 0},
		{time.Unix(1<<40, 0), maxDue},
	} {
		if got := dueMillis(tc.t); got != tc.want {
			t.Errorf("dueMillis(%v) = %d, want %d", tc.t, got, tc.want)
		}
	}
}

// A delay queue records its own kind in its spec record and telemetry, so a
// FIFO or priority queue handle on its directory is refused.
func TestDelayQueueKindName(t *testing.T) {
	for _, tc := range []struct {
		cfg  queueConfig
		want string
	}{
		{queueConfig{}, "queue"},
		{queueConfig{priority: true, levels: 2}, "priority_queue"},
		{queueConfig{delay: true}, "delay_queue"},
		{queueConfig{delay: true, ack: true}, "delay_queue"},
	} {
		if got := tc.cfg.kindName(); got != tc.want {
			t.Errorf("%+v: kindName = %q, want %q", tc.cfg, got, tc.want)
		}
		if got := tc.cfg.record().Kind; got != tc.want {
			t.Errorf("%+v: record kind = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}
