package spec

import "testing"

func TestCamelCase(t *testing.T) {
	for _, tc := range []struct{ in, camel, lower string }{
		{"order_lock", "OrderLock", "orderLock"},
		{"dark_mode", "DarkMode", "darkMode"},
		{"user_id", "UserID", "userID"},
		{"id", "ID", "id"},
		{"id_map", "IDMap", "idMap"},
		{"http_url", "HTTPURL", "httpURL"},
		{"shard", "Shard", "shard"},
		{"a_1", "A1", "a1"},
		{"a1", "A1", "a1"},
		{"Job", "Job", "job"},
		{"JobSpec", "JobSpec", "jobspec"},
		{"api_ttl_json", "APITTLJSON", "apiTTLJSON"},
		{"a__b_", "AB", "aB"},
		{"_", "", ""},
		{"", "", ""},
		{"élan", "Élan", "élan"},
	} {
		if got := CamelCase(tc.in); got != tc.camel {
			t.Errorf("CamelCase(%q) = %q, want %q", tc.in, got, tc.camel)
		}
		if got := LowerCamelCase(tc.in); got != tc.lower {
			t.Errorf("LowerCamelCase(%q) = %q, want %q", tc.in, got, tc.lower)
		}
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"version", "package", "output", "resources", "doc", "leases", "lock"}
	for _, tc := range []struct{ in, want string }{
		{"pakage", "package"},
		{"Version", "version"},
		{"resoruces", "resources"},
		{"leasse", "leases"},
		{"lok", "lock"},
		{"foo", ""},
		{"x", ""},
		{"outputs_dir", ""},
	} {
		if got := suggest(tc.in, known); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"abc", "ab", 1},
		{"kitten", "sitting", 3}, {"ca", "abc", 3},
	} {
		if got := editDistance(tc.a, tc.b, 10); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
