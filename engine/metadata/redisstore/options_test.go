package redisstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/engine/metadata"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestOptionsFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want Options
	}{
		{nil, Options{}},
		{map[string]string{EnvPassword: "pw", EnvDBIndex: "3"}, Options{Password: "pw", DB: 3}},
		{map[string]string{EnvUsername: "u", EnvPassword: "p", EnvDBIndex: " 255 "}, Options{Username: "u", Password: "p", DB: 255}},
		{map[string]string{EnvDBIndex: ""}, Options{}},
		{map[string]string{EnvDBIndex: "0"}, Options{}},
	} {
		got, err := OptionsFromEnv(envOf(c.env))
		if err != nil || got != c.want {
			t.Fatalf("OptionsFromEnv(%v) = %+v, %v; want %+v", c.env, got, err, c.want)
		}
	}
	for _, bad := range []string{"256", "-1", "abc", "1.5", "0x1", "99999999999999999999"} {
		_, err := OptionsFromEnv(envOf(map[string]string{EnvDBIndex: bad, EnvPassword: "topsecret"}))
		if !errors.Is(err, ErrBadOptions) || !errors.Is(err, metadata.ErrStore) {
			t.Fatalf("%s=%q: %v, want ErrBadOptions", EnvDBIndex, bad, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, EnvDBIndex) || !strings.Contains(msg, `"`+bad+`"`) || strings.Contains(msg, "topsecret") {
			t.Fatalf("%s=%q: message %q should name the variable and value only", EnvDBIndex, bad, msg)
		}
	}
	if _, err := OptionsFromEnv(nil); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("nil lookup: %v", err)
	}
}
