package inspect

import (
	"bytes"
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
	if r.NoInstances {
		return "no instances"
	}
	if sec := r.section(); sec != nil {
		return sec.summary()
	}
	return ""
}

// details are the indented lines under a resource: role, who, how long.
func details(r Resource) [][3]string {
	if sec := r.section(); r.Error == "" && sec != nil {
		return sec.details()
	}
	return nil
}

// who describes a contender's owner: mode, host and pid, purpose, and a
// revocation request.
func who(c Contender) string {
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

// String is the value as the table shows it: JSON as is, text quoted,
// other bytes as base64.
func (v Value) String() string { return show(&v) }

// Words is the value in words, for a label or a line a reader scans: a
// JSON object's fields as "key value" pairs in the payload's order,
// separated by " · ", a JSON string or text as itself, anything else as
// String shows it. Characters that would garble a terminal are replaced.
func (v Value) Words() string {
	switch {
	case v.Text != nil:
		return safe(*v.Text)
	case v.JSON == nil:
		return v.String()
	}
	if w, ok := objectWords(v.JSON); ok {
		return safe(w)
	}
	var s string
	if json.Unmarshal(v.JSON, &s) == nil {
		return safe(s)
	}
	return v.String()
}

// objectWords is Words of a non-empty JSON object; false for anything
// else.
func objectWords(raw json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	var parts []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", false
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return "", false
		}
		var s string
		if json.Unmarshal(val, &s) != nil {
			s = string(val)
		}
		parts = append(parts, fmt.Sprint(k)+" "+s)
	}
	return strings.Join(parts, " · "), len(parts) > 0
}
