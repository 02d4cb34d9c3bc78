package oss

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
)

func cfgFrom(t *testing.T, m map[string]string) (Config, []string, error, string) {
	t.Helper()
	var logBuf bytes.Buffer
	env := objstore.NewEnv(objstore.MapLookup(m), slog.New(slog.NewTextHandler(&logBuf, nil)))
	c, err := ConfigFromEnv(env)
	return c, env.Warnings(), err, logBuf.String()
}

func base() map[string]string {
	return map[string]string{EnvEndpoint: "https://oss.example.com", EnvBucket: "b", EnvRegion: "cn-hangzhou",
		EnvAccessKeyID: "id", EnvAccessSecret: "secret"}
}

func TestInitUsesCompatibilityAliases(t *testing.T) {
	a := New(Options{Lookup: objstore.MapLookup(map[string]string{EnvEndpointAlias: "http://127.0.0.1:1", EnvBucketAlias: "b",
		EnvRegionAlias: "r", EnvAnonymous: "true"})})
	defer a.Close()
	wantCode(t, "Init", a.Init(ctx), objstore.CodeOK)
}

func TestEmptyPrimaryOverridesCompatibilityAlias(t *testing.T) {
	m := base()
	m[EnvEndpoint] = ""
	m[EnvEndpointAlias] = "https://alias.example.com"
	_, _, err, _ := cfgFrom(t, m)
	wantCode(t, "empty primary", err, objstore.CodeInvalidParams)
}

func TestCredentialsAreRequiredUnlessAnonymous(t *testing.T) {
	for _, drop := range []string{EnvAccessKeyID, EnvAccessSecret} {
		m := base()
		delete(m, drop)
		_, _, err, _ := cfgFrom(t, m)
		wantCode(t, "without "+drop, err, objstore.CodeInvalidParams)
		m[EnvAnonymous] = "yes"
		_, _, err, _ = cfgFrom(t, m)
		wantCode(t, "anonymous without "+drop, err, objstore.CodeOK)
	}
}

func TestInvalidAnonymousValueWarnsAndUsesFalse(t *testing.T) {
	m := base()
	delete(m, EnvAccessKeyID)
	delete(m, EnvAccessSecret)
	m[EnvAnonymous] = "invalid"
	_, warns, err, logs := cfgFrom(t, m)
	wantCode(t, "config", err, objstore.CodeInvalidParams)
	want := "[Mooncake] Warning: invalid value 'invalid' for env MOONCAKE_OSS_ANONYMOUS, using default 0"
	if len(warns) != 1 || warns[0] != want {
		t.Fatalf("warnings %q", warns)
	}
	if !strings.Contains(logs, "invalid value 'invalid' for env MOONCAKE_OSS_ANONYMOUS, using default 0") {
		t.Fatalf("warning not logged: %s", logs)
	}
}

func TestInitReadsCurrentEnvironmentEachTime(t *testing.T) {
	m := map[string]string{}
	a := New(Options{Lookup: objstore.MapLookup(m)})
	defer a.Close()
	wantCode(t, "empty env", a.Init(ctx), objstore.CodeInvalidParams)
	m[EnvEndpoint], m[EnvBucket], m[EnvRegion], m[EnvAnonymous] = "http://127.0.0.1:1", "b", "r", "1"
	wantCode(t, "after setting env", a.Init(ctx), objstore.CodeOK)
	// Running: a later Init re-validates but never reconfigures.
	m[EnvBucket] = "other"
	wantCode(t, "re-init", a.Init(ctx), objstore.CodeOK)
	if c, _ := a.Config(); c.Bucket != "b" {
		t.Fatalf("running adapter changed bucket to %q", c.Bucket)
	}
	delete(m, EnvBucket)
	wantCode(t, "re-init with a broken env", a.Init(ctx), objstore.CodeInvalidParams)
}

func TestLoadsPrimaryValuesAndNormalizesStrings(t *testing.T) {
	m := base()
	m[EnvEndpoint] = "https://oss.example.com///"
	m[EnvSecurityToken] = "  primary-token\t"
	m[EnvPathStyle] = "TRUE"
	m[EnvAnonymous] = "On"
	for k, v := range map[string]string{EnvEndpointAlias: "x", EnvBucketAlias: "x", EnvRegionAlias: "x",
		EnvAccessKeyIDAlias: "x", EnvAccessSecretAlias: "x", EnvSessionTokenAlias: "x"} {
		m[k] = v
	}
	c, warns, err, _ := cfgFrom(t, m)
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	want := Config{Endpoint: "https://oss.example.com", Bucket: "b", Region: "cn-hangzhou",
		Credentials: objstore.Credentials{AccessKeyID: "id", SecretAccessKey: "secret", SessionToken: "primary-token"},
		PathStyle:   true, Anonymous: true, Tuning: objstore.Tuning{MaxConnections: 64, ReceiveBufferSize: 1 << 20, UploadBufferSize: 1 << 20}}
	if c != want {
		t.Fatalf("config %v, want %v", c, want)
	}
}

func TestLoadsCompatibilityAliases(t *testing.T) {
	c, _, err, _ := cfgFrom(t, map[string]string{EnvEndpointAlias: "http://a/", EnvBucketAlias: "ab", EnvRegionAlias: "ar",
		EnvAccessKeyIDAlias: "aid", EnvAccessSecretAlias: "asecret", EnvSessionTokenAlias: " atok "})
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoint != "http://a" || c.Bucket != "ab" || c.Region != "ar" || c.Credentials !=
		(objstore.Credentials{AccessKeyID: "aid", SecretAccessKey: "asecret", SessionToken: "atok"}) {
		t.Fatalf("config %v", c)
	}
}

func TestPresentPrimaryOverridesCompatibilityAlias(t *testing.T) {
	m := base()
	m[EnvSecurityToken] = ""
	m[EnvSessionTokenAlias] = "alias-token"
	c, _, err, _ := cfgFrom(t, m)
	if err != nil || c.Credentials.SessionToken != "" {
		t.Fatalf("token %q err %v", c.Credentials.SessionToken, err)
	}
}

func TestInvalidBoolValuesWarnAndUseFalse(t *testing.T) {
	m := base()
	m[EnvAnonymous] = "maybe"
	m[EnvPathStyle] = "sometimes"
	c, warns, err, _ := cfgFrom(t, m)
	if err != nil || c.PathStyle || c.Anonymous {
		t.Fatal(err, c)
	}
	want := []string{
		"[Mooncake] Warning: invalid value 'sometimes' for env MOONCAKE_OSS_PATH_STYLE, using default 0",
		"[Mooncake] Warning: invalid value 'maybe' for env MOONCAKE_OSS_ANONYMOUS, using default 0",
	}
	if fmt.Sprint(warns) != fmt.Sprint(want) {
		t.Fatalf("warnings %q, want %q", warns, want)
	}
}

func TestRejectsMissingRequiredValuesBeforeCredentials(t *testing.T) {
	for _, drop := range []string{EnvEndpoint, EnvBucket, EnvRegion} {
		m := base()
		delete(m, drop)
		delete(m, EnvAccessKeyID)
		_, _, err, _ := cfgFrom(t, m)
		wantCode(t, drop, err, objstore.CodeInvalidParams)
		if !strings.Contains(err.Error(), drop) || strings.Contains(err.Error(), EnvAccessKeyID) {
			t.Fatalf("missing %s reported as %v", drop, err)
		}
	}
}

func TestAllowsMissingCredentialsOnlyWhenAnonymous(t *testing.T) {
	m := base()
	delete(m, EnvAccessKeyID)
	delete(m, EnvAccessSecret)
	_, _, err, _ := cfgFrom(t, m)
	wantCode(t, "not anonymous", err, objstore.CodeInvalidParams)
	m[EnvAnonymous] = "yes"
	_, _, err, _ = cfgFrom(t, m)
	wantCode(t, "anonymous", err, objstore.CodeOK)
}

func TestNewConfigsReadCurrentEnvironment(t *testing.T) {
	m := base()
	c1, _, _, _ := cfgFrom(t, m)
	m[EnvBucket] = "second"
	c2, _, _, _ := cfgFrom(t, m)
	if c1.Bucket != "b" || c2.Bucket != "second" {
		t.Fatal(c1.Bucket, c2.Bucket)
	}
}

func TestTuningDefaultsAndOverrides(t *testing.T) {
	m := base()
	c, _, _, _ := cfgFrom(t, m)
	if c.Tuning != (objstore.Tuning{MaxConnections: 64, ReceiveBufferSize: 1048576, UploadBufferSize: 1048576}) {
		t.Fatal(c.Tuning)
	}
	m["MOONCAKE_OSS_MAX_CONNECTIONS"], m["MOONCAKE_OSS_RECEIVE_BUFFER_SIZE"], m["MOONCAKE_OSS_UPLOAD_BUFFER_SIZE"] = "128", "65536", "131072"
	c, _, _, _ = cfgFrom(t, m)
	if c.Tuning != (objstore.Tuning{MaxConnections: 128, ReceiveBufferSize: 65536, UploadBufferSize: 131072}) {
		t.Fatal(c.Tuning)
	}
}

func TestTuningValuesKeepExistingBounds(t *testing.T) {
	cases := []struct {
		mc, rb, ub string
		want       objstore.Tuning
	}{
		{"-1", "-1", "-1", objstore.Tuning{MaxConnections: 1, ReceiveBufferSize: 16384, UploadBufferSize: 16384}},
		{"0", "0", "0", objstore.Tuning{MaxConnections: 1, ReceiveBufferSize: 16384, UploadBufferSize: 16384}},
		{"2147483647", "2147483647", "2147483647", objstore.Tuning{MaxConnections: 2147483647, ReceiveBufferSize: 10485760, UploadBufferSize: 2097152}},
		{" +7 ", "16385", "2097151", objstore.Tuning{MaxConnections: 7, ReceiveBufferSize: 16385, UploadBufferSize: 2097151}},
	}
	for _, tc := range cases {
		m := base()
		m["MOONCAKE_OSS_MAX_CONNECTIONS"], m["MOONCAKE_OSS_RECEIVE_BUFFER_SIZE"], m["MOONCAKE_OSS_UPLOAD_BUFFER_SIZE"] = tc.mc, tc.rb, tc.ub
		c, warns, _, _ := cfgFrom(t, m)
		if c.Tuning != tc.want || len(warns) != 0 {
			t.Errorf("%q/%q/%q: %+v %q", tc.mc, tc.rb, tc.ub, c.Tuning, warns)
		}
	}
}

func TestInvalidTuningValuesWarnAndUseDefaults(t *testing.T) {
	for _, bad := range []string{"invalid", "", "65536bytes", "2147483648", "-2147483649", "++5", "+-5"} {
		m := base()
		m["MOONCAKE_OSS_MAX_CONNECTIONS"], m["MOONCAKE_OSS_RECEIVE_BUFFER_SIZE"], m["MOONCAKE_OSS_UPLOAD_BUFFER_SIZE"] = bad, bad, bad
		c, warns, _, _ := cfgFrom(t, m)
		want := []string{
			"[Mooncake] Warning: invalid value '" + bad + "' for env MOONCAKE_OSS_MAX_CONNECTIONS, using default 64",
			"[Mooncake] Warning: invalid value '" + bad + "' for env MOONCAKE_OSS_RECEIVE_BUFFER_SIZE, using default 1048576",
			"[Mooncake] Warning: invalid value '" + bad + "' for env MOONCAKE_OSS_UPLOAD_BUFFER_SIZE, using default 1048576",
		}
		if fmt.Sprint(warns) != fmt.Sprint(want) || c.Tuning.MaxConnections != 64 {
			t.Errorf("%q: %q %+v", bad, warns, c.Tuning)
		}
	}
}

func TestRejectsEndpointPath(t *testing.T) {
	m := base()
	m[EnvEndpoint] = "https://oss.example.com/sub"
	_, _, err, _ := cfgFrom(t, m)
	wantCode(t, "endpoint path", err, objstore.CodeInvalidParams)
}
