package objstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestParseBoolAndInt(t *testing.T) {
	for s, want := range map[string]bool{"1": true, " TRUE\t": true, "yes": true, "On": true, "enable": true,
		"0": false, "false": false, "NO": false, "off": false, "Disable": false} {
		if v, ok := ParseBool(s); !ok || v != want {
			t.Errorf("ParseBool(%q) = %v, %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "2", "y", "truee"} {
		if _, ok := ParseBool(s); ok {
			t.Errorf("ParseBool(%q) accepted", s)
		}
	}
	for s, want := range map[string]int32{"5": 5, "+5": 5, " -7\n": -7, "2147483647": 2147483647, "-2147483648": -2147483648, "0": 0} {
		if v, ok := ParseInt32(s); !ok || v != want {
			t.Errorf("ParseInt32(%q) = %v, %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "invalid", "65536bytes", "2147483648", "-2147483649", "++5", "+-5", "-", "+", "1 2", "99999999999999999999"} {
		if _, ok := ParseInt32(s); ok {
			t.Errorf("ParseInt32(%q) accepted", s)
		}
	}
}

func TestEnvWarningsAndPrecedence(t *testing.T) {
	var logs bytes.Buffer
	m := map[string]string{"B": "x", "I": "12z", "P": "", "A": "alias", "MOONCAKE_DFS_FS_ADAPTER": "",
		"MOONCAKE_DISTRIBUTED_FS_TYPE": "oss", "MOONCAKE_DISTRIBUTED_ROOT_DIR": "rel/../dir"}
	e := NewEnv(MapLookup(m), slog.New(slog.NewTextHandler(&logs, nil)))
	if e.Bool("B", true) != true || e.Int("I", 9) != 9 || e.Bool("UNSET", false) {
		t.Fatal("defaults")
	}
	want := []string{"[Mooncake] Warning: invalid value 'x' for env B, using default 1",
		"[Mooncake] Warning: invalid value '12z' for env I, using default 9"}
	if w := e.Warnings(); len(w) != 2 || w[0] != want[0] || w[1] != want[1] {
		t.Fatalf("%q", w)
	}
	if !strings.Contains(logs.String(), "using default 9") {
		t.Fatal("warning not logged")
	}
	if e.String("P", "A") != "" || e.String("Q", "A") != "alias" {
		t.Fatal("present primary must win even when empty")
	}
	if AdapterType(e) != "" {
		t.Fatal("MOONCAKE_DFS_FS_ADAPTER must win even when empty")
	}
	delete(m, "MOONCAKE_DFS_FS_ADAPTER")
	if AdapterType(e) != "oss" || !IsObjectStorage("oss") || IsObjectStorage("hf3fs") {
		t.Fatal("adapter type")
	}
	if got := RootDir(e, "/work"); got != "/work/rel/../dir" {
		t.Fatal(got)
	}
	m["MOONCAKE_DFS_ROOT_DIR"] = "/abs"
	if got := RootDir(e, "/work"); got != "/abs" {
		t.Fatal(got)
	}
	if got := RootDir(NewEnv(MapLookup(nil), nil), ""); got != DefaultRootDir {
		t.Fatal(got)
	}
}

func TestCredentialsRedaction(t *testing.T) {
	c := Credentials{AccessKeyID: "AK", SecretAccessKey: "s3cr3t", SessionToken: "t0k3n"}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("creds", "c", c)
	for _, s := range []string{c.String(), c.GoString(), logs.String()} {
		if strings.Contains(s, "s3cr3t") || strings.Contains(s, "t0k3n") || !strings.Contains(s, "AK") {
			t.Fatalf("redaction failed: %s", s)
		}
	}
}
