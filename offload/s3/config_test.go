package s3

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
)

func load(t *testing.T, m map[string]string) (Config, []string, error) {
	t.Helper()
	env := objstore.NewEnv(objstore.MapLookup(m), quiet)
	c, err := LoadConfig(env)
	if err != nil && !errors.Is(err, objstore.ErrInvalidParams) {
		t.Fatalf("error %v is not INVALID_PARAMS", err)
	}
	return c, env.Warnings(), err
}

var quiet = slog.New(slog.DiscardHandler)

func base() map[string]string {
	return map[string]string{
		EnvEndpoint: "http://127.0.0.1:9000", EnvBucket: "b",
		EnvAccessKeyID: "id", EnvSecretAccessKey: "secret",
	}
}

func TestAppliesDefaults(t *testing.T) {
	c, w, err := load(t, base())
	if err != nil {
		t.Fatal(err)
	}
	if !c.PathStyle || c.Region != "us-east-1" || c.MaxConnections != 64 || c.Anonymous ||
		c.ReceiveBufferSize != 1<<20 || c.UploadBufferSize != 1<<20 || c.Host != "127.0.0.1:9000" || c.Scheme != "http" {
		t.Fatalf("config %+v", c)
	}
	if len(w) != 2 || !strings.Contains(w[0], "us-east-1") || !strings.Contains(w[1], "path-style") {
		t.Fatalf("warnings %q", w)
	}
}

func TestFallsBackToStandardAwsVariables(t *testing.T) {
	c, _, err := load(t, map[string]string{
		EnvEndpointAlias: "https://s3.us-west-2.amazonaws.com", EnvBucket: "b", "AWS_REGION": "us-west-2",
		"AWS_ACCESS_KEY_ID": "aid", "AWS_SECRET_ACCESS_KEY": "asecret", "AWS_SESSION_TOKEN": " atok\t",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessKeyID != "aid" || c.SecretAccessKey != "asecret" || c.SessionToken != "atok" || c.Region != "us-west-2" ||
		c.PathStyle || c.Host != "s3.us-west-2.amazonaws.com" {
		t.Fatalf("config %+v", c)
	}
}

func TestMooncakeVariablesOverrideAwsVariables(t *testing.T) {
	m := base()
	m[EnvEndpoint] = "https://mc.example.com"
	m[EnvEndpointAlias] = "https://aws.example.com"
	m[EnvRegion] = "mc-region"
	m["AWS_REGION"] = "aws-region"
	m[EnvSessionToken] = "mctok"
	m["AWS_ACCESS_KEY_ID"], m["AWS_SECRET_ACCESS_KEY"], m["AWS_SESSION_TOKEN"] = "aid", "asecret", "atok"
	c, _, err := load(t, m)
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "mc.example.com" || c.Region != "mc-region" || c.AccessKeyID != "id" || c.SecretAccessKey != "secret" || c.SessionToken != "mctok" {
		t.Fatalf("config %+v", c)
	}
}

func TestDoesNotMixCredentialSources(t *testing.T) {
	// Only the MOONCAKE id is set: the secret must not come from AWS_*.
	m := map[string]string{EnvEndpoint: "http://localhost:9000", EnvBucket: "b", EnvAccessKeyID: "id",
		"AWS_SECRET_ACCESS_KEY": "asecret", "AWS_SESSION_TOKEN": "atok"}
	if _, _, err := load(t, m); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("mixed credentials accepted: %v", err)
	}
	// A set-but-empty MOONCAKE secret selects the MOONCAKE set too.
	m = map[string]string{EnvEndpoint: "http://localhost:9000", EnvBucket: "b", EnvSecretAccessKey: "",
		"AWS_ACCESS_KEY_ID": "aid", "AWS_SECRET_ACCESS_KEY": "asecret"}
	if _, _, err := load(t, m); err == nil {
		t.Fatal("empty MOONCAKE secret fell back to AWS credentials")
	}
}

func TestDoesNotCompleteAwsKeysFromMooncakeVariables(t *testing.T) {
	m := map[string]string{EnvEndpoint: "http://localhost:9000", EnvBucket: "b",
		"AWS_ACCESS_KEY_ID": "aid", EnvSessionToken: "mctok"}
	if _, _, err := load(t, m); err == nil {
		t.Fatal("AWS id without AWS secret accepted")
	}
	m["AWS_SECRET_ACCESS_KEY"] = "asecret"
	c, _, err := load(t, m)
	if err != nil {
		t.Fatal(err)
	}
	if c.SessionToken != "" {
		t.Fatalf("token %q taken from MOONCAKE_S3_SESSION_TOKEN", c.SessionToken)
	}
}

func TestReadsAwsDefaultRegion(t *testing.T) {
	m := base()
	m["AWS_DEFAULT_REGION"] = "eu-west-1"
	c, w, err := load(t, m)
	if err != nil || c.Region != "eu-west-1" {
		t.Fatalf("region %q err %v", c.Region, err)
	}
	for _, s := range w {
		if strings.Contains(s, "region") {
			t.Fatalf("unexpected region warning %q", s)
		}
	}
	m["AWS_REGION"] = "ap-south-1"
	if c, _, _ = load(t, m); c.Region != "ap-south-1" {
		t.Fatalf("AWS_REGION must win over AWS_DEFAULT_REGION, got %q", c.Region)
	}
	m[EnvRegion] = ""
	if _, _, err = load(t, m); err == nil || !strings.Contains(err.Error(), "region") {
		t.Fatalf("empty primary region: %v", err)
	}
}

func TestRequiresExplicitScheme(t *testing.T) {
	for ep, ok := range map[string]bool{
		"s3.example.com:9000": false, "ftp://x": false, "HTTPS://S3.example.com": true, "Http://h": true,
	} {
		m := base()
		m[EnvEndpoint] = ep
		_, _, err := load(t, m)
		if (err == nil) != ok {
			t.Errorf("endpoint %q: err %v", ep, err)
		}
		if err != nil && !strings.Contains(err.Error(), "http://") {
			t.Errorf("endpoint %q: error %q does not name the rule", ep, err)
		}
	}
}

func TestUsesPathStyleForIpAndLocalhostEndpoints(t *testing.T) {
	for ep, want := range map[string]bool{
		"http://127.0.0.1:9000": true, "http://LOCALHOST:9000": true, "http://[::1]:9000": true,
		"http://10.0.0.5": true, "https://s3.us-east-1.amazonaws.com": false, "https://my-host.internal:8443": false,
	} {
		m := base()
		m[EnvEndpoint] = ep
		c, _, err := load(t, m)
		if err != nil || c.PathStyle != want {
			t.Errorf("%s: path style %v err %v, want %v", ep, c.PathStyle, err, want)
		}
	}
}

func TestRejectsMissingEndpointOrBucket(t *testing.T) {
	m := base()
	delete(m, EnvEndpoint)
	if _, _, err := load(t, m); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("missing endpoint: %v", err)
	}
	m = base()
	m[EnvEndpoint] = ""
	m[EnvEndpointAlias] = "http://127.0.0.1:1"
	if _, _, err := load(t, m); err == nil {
		t.Fatal("empty primary endpoint must win over the alias")
	}
	m = base()
	delete(m, EnvBucket)
	delete(m, EnvAccessKeyID)
	if _, _, err := load(t, m); err == nil || !strings.Contains(err.Error(), "bucket") {
		t.Fatalf("missing bucket must be reported before credentials: %v", err)
	}
}

func TestRejectsEndpointWithPath(t *testing.T) {
	for _, ep := range []string{"http://h/path", "http://h/a/", "http://h?x=1", "http://", "http:///", "http://:80"} {
		m := base()
		m[EnvEndpoint] = ep
		if _, _, err := load(t, m); err == nil {
			t.Errorf("endpoint %q accepted", ep)
		}
	}
	m := base()
	m[EnvEndpoint] = "http://h:9000///"
	if c, _, err := load(t, m); err != nil || c.Endpoint != "http://h:9000" {
		t.Fatalf("trailing slashes: %q %v", c.Endpoint, err)
	}
}

func TestRequiresCredentialsUnlessAnonymous(t *testing.T) {
	m := map[string]string{EnvEndpoint: "http://127.0.0.1:9000", EnvBucket: "b"}
	if _, _, err := load(t, m); err == nil {
		t.Fatal("no credentials accepted")
	}
	m[EnvAnonymous] = " Yes "
	if c, _, err := load(t, m); err != nil || !c.Anonymous {
		t.Fatalf("anonymous: %+v %v", c, err)
	}
	m[EnvAnonymous] = "maybe"
	_, w, err := load(t, m)
	if err == nil {
		t.Fatal("invalid anonymous value must fall back to false")
	}
	if !slices.Contains(w, "[Mooncake] Warning: invalid value 'maybe' for env MOONCAKE_S3_ANONYMOUS, using default 0") {
		t.Fatalf("warnings %q", w)
	}
}

func TestClampsConnectionAndBufferSettings(t *testing.T) {
	m := base()
	m["MOONCAKE_S3_MAX_CONNECTIONS"] = "0"
	m["MOONCAKE_S3_RECEIVE_BUFFER_SIZE"] = "1"
	m["MOONCAKE_S3_UPLOAD_BUFFER_SIZE"] = "999999999"
	c, _, err := load(t, m)
	if err != nil || c.MaxConnections != 1 || c.ReceiveBufferSize != 16384 || c.UploadBufferSize != 2097152 {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestInvalidValuesWarnInOrder(t *testing.T) {
	m := base()
	m[EnvPathStyle] = "sometimes"
	m[EnvAnonymous] = "never"
	m["MOONCAKE_S3_MAX_CONNECTIONS"] = "65536bytes"
	m["MOONCAKE_S3_RECEIVE_BUFFER_SIZE"] = "2147483648"
	m["MOONCAKE_S3_UPLOAD_BUFFER_SIZE"] = "++5"
	c, all, err := load(t, m)
	if err != nil {
		t.Fatal(err)
	}
	var w []string
	for _, s := range all {
		if strings.HasPrefix(s, "[Mooncake]") {
			w = append(w, s)
		}
	}
	want := []string{
		"[Mooncake] Warning: invalid value 'sometimes' for env MOONCAKE_S3_PATH_STYLE, using default 0",
		"[Mooncake] Warning: invalid value 'never' for env MOONCAKE_S3_ANONYMOUS, using default 0",
		"[Mooncake] Warning: invalid value '65536bytes' for env MOONCAKE_S3_MAX_CONNECTIONS, using default 64",
		"[Mooncake] Warning: invalid value '2147483648' for env MOONCAKE_S3_RECEIVE_BUFFER_SIZE, using default 1048576",
		"[Mooncake] Warning: invalid value '++5' for env MOONCAKE_S3_UPLOAD_BUFFER_SIZE, using default 1048576",
	}
	if len(w) < len(want) {
		t.Fatalf("warnings %q", w)
	}
	for i := range want {
		if w[i] != want[i] {
			t.Errorf("warning %d = %q, want %q", i, w[i], want[i])
		}
	}
	if c.MaxConnections != 64 || c.ReceiveBufferSize != 1<<20 || c.UploadBufferSize != 1<<20 {
		t.Fatalf("%+v", c)
	}
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	m := base()
	m[EnvSecretAccessKey] = "TOPSECRETVALUE"
	m[EnvSessionToken] = "TOKENVALUE"
	c, _, err := load(t, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), c.LogValue().String()} {
		if strings.Contains(s, "TOPSECRETVALUE") || strings.Contains(s, "TOKENVALUE") {
			t.Fatalf("secret printed: %s", s)
		}
	}
}
