package objstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Credentials are the secrets a request is signed with. Their String,
// GoString and LogValue methods redact the secret and the token, so
// printing or logging Credentials never leaks them.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// String shows the access key id only.
func (c Credentials) String() string {
	tok := "none"
	if c.SessionToken != "" {
		tok = "[REDACTED]"
	}
	return fmt.Sprintf("{AccessKeyID:%s SecretAccessKey:[REDACTED] SessionToken:%s}", c.AccessKeyID, tok)
}

// GoString redacts like String (for %#v).
func (c Credentials) GoString() string { return "objstore.Credentials" + c.String() }

// LogValue redacts like String (for slog).
func (c Credentials) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Empty reports whether no access key id and no secret are set.
func (c Credentials) Empty() bool { return c.AccessKeyID == "" && c.SecretAccessKey == "" }

// CredentialsProvider hands out the credentials to sign one request with.
// Credentials is called once per signing (at request admission), must be
// cheap and safe for concurrent use, and may return a newer value each call.
type CredentialsProvider interface {
	Credentials() Credentials
}

// StaticCredentials is a provider that never changes.
type StaticCredentials Credentials

// Credentials returns c.
func (c StaticCredentials) Credentials() Credentials { return Credentials(c) }

// FileCredentials is a provider backed by a file of NAME=VALUE lines
// (blank lines and lines starting with '#' are ignored). Recognised names:
// ACCESS_KEY_ID; SECRET_ACCESS_KEY or ACCESS_KEY_SECRET; SESSION_TOKEN or
// SECURITY_TOKEN (each optionally prefixed with MOONCAKE_OSS_, OSS_,
// MOONCAKE_S3_ or AWS_). Values are trimmed of ASCII whitespace. Reload
// (or SIGHUP after WatchSIGHUP) swaps the credentials atomically; a failed
// reload keeps the previous ones.
type FileCredentials struct {
	path string
	log  *slog.Logger
	cur  atomic.Pointer[Credentials]
}

// NewFileCredentials reads path once. An unreadable file or one without
// ACCESS_KEY_ID and a secret is an ErrInvalidParams error (the message
// names the file, never a value).
func NewFileCredentials(path string, log *slog.Logger) (*FileCredentials, error) {
	if log == nil {
		log = slog.Default()
	}
	f := &FileCredentials{path: path, log: log}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Credentials returns the most recently loaded credentials.
func (f *FileCredentials) Credentials() Credentials { return *f.cur.Load() }

// Reload re-reads the file and, when it is valid, swaps the credentials.
func (f *FileCredentials) Reload() error {
	data, err := os.ReadFile(f.path)
	if err != nil {
		return &Error{Code: CodeInvalidParams, Op: "CREDENTIALS", Msg: "cannot read credentials file", Err: err}
	}
	var c Credentials
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := TrimASCIISpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		name = strings.ToUpper(TrimASCIISpace(name))
		for _, p := range []string{"MOONCAKE_OSS_", "MOONCAKE_S3_", "OSS_", "AWS_"} {
			name = strings.TrimPrefix(name, p)
		}
		val = TrimASCIISpace(val)
		switch name {
		case "ACCESS_KEY_ID":
			c.AccessKeyID = val
		case "SECRET_ACCESS_KEY", "ACCESS_KEY_SECRET":
			c.SecretAccessKey = val
		case "SESSION_TOKEN", "SECURITY_TOKEN":
			c.SessionToken = val
		}
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return &Error{Code: CodeInvalidParams, Op: "CREDENTIALS",
			Msg: "credentials file " + f.path + " lacks ACCESS_KEY_ID or the secret"}
	}
	f.cur.Store(&c)
	return nil
}

// WatchSIGHUP reloads the file on every SIGHUP until ctx is done or the
// returned stop function is called (stop is idempotent and waits for the
// watcher to exit).
func (f *FileCredentials) WatchSIGHUP(ctx context.Context) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				if err := f.Reload(); err != nil {
					f.log.Warn("credentials reload failed; keeping the previous credentials", "err", err)
				} else {
					f.log.Info("credentials reloaded", "file", f.path)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			cancel()
			<-done
		})
	}
}
