package inspect

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// JSON writes s as an indented JSON document (the Snapshot structure).
func JSON(w io.Writer, s *Snapshot) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// Text writes s as an aligned table for people: one line per resource
// instance (name, kind, path, summary), then one indented line per holder,
// waiter, candidate, member, participant or vote. It depends on s only.
func Text(w io.Writer, s *Snapshot) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tKIND\tPATH\tSTATE\n")
	for _, r := range s.Resources {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Kind, r.Path, summary(r))
		for _, d := range details(r) {
			fmt.Fprintf(tw, "\t  %s\t%s\t%s\n", d[0], d[1], d[2])
		}
	}
	if len(s.Resources) == 0 {
		fmt.Fprintf(tw, "(no resources declared)\t\t\t\n")
	}
	return tw.Flush()
}

// summary is the STATE column of a resource line.
func summary(r Resource) string {
	if r.Error != "" {
		return "error: " + oneLine(r.Error)
	}
	switch {
	case r.Lock != nil:
		l := r.Lock
		var b strings.Builder
		switch {
		case l.Leases > 0:
			fmt.Fprintf(&b, "%d/%d leases held", len(l.Holders), l.Leases)
		case len(l.Holders) == 0:
			b.WriteString("free")
		case len(l.Holders) == 1:
			b.WriteString("held")
		default:
			fmt.Fprintf(&b, "held by %d readers", len(l.Holders))
		}
		if len(l.Waiters) > 0 {
			fmt.Fprintf(&b, ", %d waiting", len(l.Waiters))
		}
		return b.String()
	case r.Queue != nil:
		q := r.Queue
		s := plural(q.Depth, "item")
		if len(q.Priorities) > 0 {
			var ps []string
			for _, p := range q.Priorities {
				ps = append(ps, fmt.Sprintf("%s %d", p.Name, p.Depth))
			}
			s += " (" + strings.Join(ps, ", ") + ")"
		}
		if q.Claimed > 0 {
			s += fmt.Sprintf(", %d claimed", q.Claimed)
		}
		if q.Oldest != nil {
			s += ", oldest " + age(q.OldestAge)
		}
		return s
	case r.Barrier != nil:
		if r.Barrier.Up {
			return "up"
		}
		return "down"
	case r.DoubleBarrier != nil:
		d := r.DoubleBarrier
		s := fmt.Sprintf("%d/%d entered", len(d.Participants), d.Size)
		if d.Ready {
			s += ", ready"
		}
		return s
	case r.Election != nil:
		e := r.Election
		s := "no leader"
		if e.Elected {
			s = fmt.Sprintf("leader epoch %d: %s", e.Epoch, show(e.Payload))
		}
		return s + ", " + plural(len(e.Candidates), "candidate")
	case r.Group != nil:
		return plural(len(r.Group.Members), "member")
	case r.Config != nil:
		if !r.Config.Exists {
			return "absent"
		}
		return fmt.Sprintf("version %d: %s", r.Config.Version, show(r.Config.Value))
	case r.Counter != nil:
		return strconv.FormatInt(r.Counter.Value, 10)
	case r.Transaction != nil:
		t := r.Transaction
		switch {
		case !t.Proposed:
			return "not proposed"
		case t.Decision != "":
			return "decided: " + t.Decision
		}
		return "voting"
	}
	return ""
}

// details are the indented lines under a resource: role, who, how long.
func details(r Resource) [][3]string {
	var out [][3]string
	who := func(c Contender) string {
		var parts []string
		if c.Mode != "" {
			parts = append(parts, c.Mode)
		}
		if c.Host != "" {
			parts = append(parts, fmt.Sprintf("%s pid %d", safe(c.Host), c.PID))
		} else {
			parts = append(parts, "(no owner metadata)")
		}
		if c.Purpose != "" {
			parts = append(parts, strconv.Quote(c.Purpose))
		}
		if c.Revoke {
			parts = append(parts, "revoke requested")
		}
		return strings.Join(parts, " ")
	}
	switch {
	case r.Error != "":
	case r.Lock != nil:
		role := "holder"
		if r.Lock.Leases > 0 {
			role = "lease"
		}
		for _, c := range r.Lock.Holders {
			out = append(out, [3]string{role, who(c), "held " + age(c.AgeSeconds) + "  " + base(c.Node)})
		}
		for i, c := range r.Lock.Waiters {
			out = append(out, [3]string{fmt.Sprintf("waiter %d", i+1), who(c), "waiting " + age(c.AgeSeconds) + "  " + base(c.Node)})
		}
	case r.DoubleBarrier != nil:
		for _, c := range r.DoubleBarrier.Participants {
			out = append(out, [3]string{"participant", who(c), "entered " + age(c.AgeSeconds) + " ago"})
		}
	case r.Election != nil:
		for i, c := range r.Election.Candidates {
			role := fmt.Sprintf("candidate %d", i+1)
			if r.Election.Elected && base(c.Node) == r.Election.Leader {
				role = "leader"
			}
			out = append(out, [3]string{role, show(&c.Payload), "for " + age(c.AgeSeconds) + "  " + base(c.Node)})
		}
	case r.Group != nil:
		for i, m := range r.Group.Members {
			out = append(out, [3]string{fmt.Sprintf("member %d", i+1), show(&m), ""})
		}
	case r.Transaction != nil:
		for _, v := range r.Transaction.Votes {
			out = append(out, [3]string{"vote", v.Participant, v.State})
		}
	}
	return out
}

// show renders a value in one short line.
func show(v *Value) string {
	var s string
	switch {
	case v == nil:
		return "-"
	case v.JSON != nil:
		s = string(v.JSON)
	case v.Text != nil:
		s = strconv.Quote(*v.Text)
	case v.Base64 != nil:
		s = "base64:" + base64.StdEncoding.EncodeToString(v.Base64)
	default:
		return "(empty)"
	}
	const max = 80
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// age formats seconds: 850ms, 3.2s, 2m5s, 3h0m0s.
func age(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func base(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

func oneLine(s string) string { return safe(s) }

// safe replaces characters that would garble a terminal or the table
// (control characters, tabs, newlines) with "?".
func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsPrint(r) && r != ' ' {
			return '?'
		}
		return r
	}, s)
}

func itoa(n int) string { return strconv.Itoa(n) }

func quote(s string) string { return strconv.Quote(s) }
