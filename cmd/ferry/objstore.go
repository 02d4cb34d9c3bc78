package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/oss"
	"github.com/ferrylabs/ferry/offload/s3"
)

func init() { subcommands = append(subcommands, newObjstoreCmd) }

// objstoreFlags are the flags shared by every objstore subcommand.
type objstoreFlags struct {
	backend string
	prefix  string
	timeout time.Duration
}

func newObjstoreCmd() *cobra.Command {
	f := &objstoreFlags{}
	cmd := &cobra.Command{
		Use:   "objstore",
		Short: "Check and inspect the object store an offload owner uses (S3 or OSS)",
		Long: `objstore talks to the bucket an offload owner keeps objects in, with the
same environment variables the owner reads:

  S3:  MOONCAKE_S3_ENDPOINT (or AWS_ENDPOINT_URL), MOONCAKE_S3_BUCKET,
       MOONCAKE_S3_REGION (or AWS_REGION, AWS_DEFAULT_REGION),
       MOONCAKE_S3_ACCESS_KEY_ID / MOONCAKE_S3_SECRET_ACCESS_KEY /
       MOONCAKE_S3_SESSION_TOKEN (or the AWS_* set), MOONCAKE_S3_PATH_STYLE,
       MOONCAKE_S3_ANONYMOUS, MOONCAKE_S3_MAX_CONNECTIONS
  OSS: MOONCAKE_OSS_ENDPOINT, MOONCAKE_OSS_BUCKET, MOONCAKE_OSS_REGION,
       MOONCAKE_OSS_ACCESS_KEY_ID / MOONCAKE_OSS_ACCESS_KEY_SECRET, ...

Keys are the owner's logical keys; they are stored under the key prefix
(--prefix, by default MOONCAKE_DFS_ROOT_DIR or MOONCAKE_DISTRIBUTED_ROOT_DIR,
as the owner does). A key holding control bytes can be given as a Go
quoted string, e.g. '"tenant\x00/a"'; ls prints such keys that way.
Secrets are never printed.

Exit codes: 0 ok, 1 failure, 2 bad usage, 3 key not found (get).`,
		Example: `  # Is the configuration complete, and can this machine write, read and delete?
  ferry objstore check

  # List every key under the prefix, or only keys starting with "layer/"
  ferry objstore ls
  ferry objstore ls layer/

  # Upload a file, download it again, remove it
  ferry objstore put layer/0 ./chunk.bin
  ferry objstore get layer/0 -o /tmp/chunk.bin
  ferry objstore rm layer/0`,
	}
	cmd.PersistentFlags().StringVar(&f.backend, "backend", "", "s3 or oss (default: MOONCAKE_DFS_FS_ADAPTER or MOONCAKE_DISTRIBUTED_FS_TYPE when one is s3/oss, else s3)")
	cmd.PersistentFlags().StringVar(&f.prefix, "prefix", "", "key prefix (default: the owner's root dir from MOONCAKE_DFS_ROOT_DIR / MOONCAKE_DISTRIBUTED_ROOT_DIR)")
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", 10*time.Minute, "deadline for the whole command")
	cmd.AddCommand(objstoreCheckCmd(f), objstoreLsCmd(f), objstorePutCmd(f), objstoreGetCmd(f), objstoreRmCmd(f))
	return cmd
}

// open builds and initialises the adapter the flags and environment name.
func (f *objstoreFlags) open(cmd *cobra.Command) (objstore.Store, string, error) {
	env := objstore.NewEnv(nil, slog.Default())
	backend := f.backend
	if backend == "" {
		if t := objstore.AdapterType(env); objstore.IsObjectStorage(t) {
			backend = t
		} else {
			backend = "s3"
		}
	}
	prefix := f.prefix
	if !cmd.Flags().Changed("prefix") {
		prefix = objstore.RootDir(env, "")
	}
	var st objstore.Store
	switch backend {
	case "s3":
		st = s3.New(s3.Options{Prefix: prefix})
	case "oss":
		st = oss.New(oss.Options{Prefix: prefix})
	default:
		return nil, "", usageError{fmt.Errorf("--backend %q: want s3 or oss", backend)}
	}
	ctx := cmd.Context()
	if err := st.Init(ctx); err != nil {
		return nil, backend, err
	}
	return st, backend, nil
}

// run opens the store, runs fn with it under the --timeout deadline and
// closes it. A failure to open is explained; fn's error is returned as is.
func (f *objstoreFlags) run(cmd *cobra.Command, fn func(ctx context.Context, st objstore.Store) error) error {
	st, _, err := f.open(cmd)
	if err != nil {
		return explain(err, "")
	}
	defer st.Close()
	ctx, cancel := f.context(cmd)
	defer cancel()
	return fn(ctx, st)
}

func (f *objstoreFlags) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, f.timeout)
}

// usageArgs marks argument-count errors as usage errors (exit code 2).
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// parseKey accepts a key as typed or, when it starts with '"', as a Go
// quoted string (for keys with control bytes).
func parseKey(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		k, err := strconv.Unquote(s)
		if err != nil {
			return "", usageError{fmt.Errorf("key %s: not a valid quoted string: %v", s, err)}
		}
		return k, nil
	}
	if s == "" {
		return "", usageError{errors.New("empty key")}
	}
	return s, nil
}

// showKey prints a key as is when it is printable, else Go-quoted.
func showKey(k string) string {
	for _, r := range k {
		if r < 0x20 || r == 0x7f || r == '"' && strings.HasPrefix(k, `"`) || r == 0xFFFD {
			return strconv.Quote(k)
		}
	}
	if strings.HasPrefix(k, `"`) {
		return strconv.Quote(k)
	}
	return k
}

func objstoreCheckCmd(f *objstoreFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration, then write, read back and delete a probe object",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			st, backend, err := f.open(cmd)
			if err != nil {
				return explain(err, "")
			}
			defer st.Close()
			if c, ok := st.(*s3.Adapter); ok {
				cfg := c.Config()
				fmt.Fprintf(out, "configuration ok: %s endpoint %s, bucket %s, region %s, path style %t, anonymous %t\n",
					backend, cfg.Endpoint, cfg.Bucket, cfg.Region, cfg.PathStyle, cfg.Anonymous)
			} else {
				fmt.Fprintf(out, "configuration ok: %s\n", backend)
			}
			ctx, cancel := f.context(cmd)
			defer cancel()
			if err := st.CheckHealth(ctx); err != nil {
				return explain(err, "health check")
			}
			fmt.Fprintln(out, "health check ok: wrote, read back and deleted a probe object")
			return nil
		},
	}
}

func objstoreLsCmd(f *objstoreFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ls [KEY-PREFIX]",
		Short: "List keys (and sizes) under the prefix, optionally only those starting with KEY-PREFIX",
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			filter := ""
			if len(args) == 1 {
				var err error
				if filter, err = parseKey(args[0]); err != nil {
					return err
				}
			}
			return f.run(cmd, func(ctx context.Context, st objstore.Store) error {
				keys, err := st.ListKeys(ctx)
				if err != nil {
					return explain(err, "list")
				}
				out := cmd.OutOrStdout()
				for _, k := range keys {
					if strings.HasPrefix(k.Key, filter) {
						fmt.Fprintf(out, "%12d  %s\n", k.Size, showKey(k.Key))
					}
				}
				return nil
			})
		},
	}
}

func objstorePutCmd(f *objstoreFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "put KEY FILE",
		Short: "Upload FILE ('-' for standard input) as KEY, replacing any object there",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := parseKey(args[0])
			if err != nil {
				return err
			}
			var data []byte
			if args[1] == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(args[1])
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", args[1], err)
			}
			return f.run(cmd, func(ctx context.Context, st objstore.Store) error {
				if err := st.Put(ctx, key, data); err != nil {
					return explain(err, "put")
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "stored %s (%d bytes)\n", showKey(key), len(data))
				return nil
			})
		},
	}
}

// getChunk is how much of an object get reads per ranged request.
const getChunk = 16 << 20

func objstoreGetCmd(f *objstoreFlags) *cobra.Command {
	var outPath string
	cmd := &cobra.Command{
		Use:   "get KEY [-o FILE]",
		Short: "Download KEY to standard output or to FILE",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := parseKey(args[0])
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, st objstore.Store) error {
				size, err := st.GetSize(ctx, key)
				if err != nil {
					return explain(err, "get")
				}
				var w io.Writer = cmd.OutOrStdout()
				var file *os.File
				if outPath != "" && outPath != "-" {
					if file, err = os.Create(outPath); err != nil {
						return err
					}
					defer file.Close()
					w = file
				}
				buf := make([]byte, min(size, getChunk))
				for off := int64(0); off < size; {
					n := min(int64(len(buf)), size-off)
					if _, err := st.GetRange(ctx, key, buf[:n], off); err != nil {
						return explain(err, "get")
					}
					if _, err := w.Write(buf[:n]); err != nil {
						return fmt.Errorf("write: %w", err)
					}
					off += n
				}
				if file != nil {
					if err := file.Close(); err != nil {
						return fmt.Errorf("write %s: %w", outPath, err)
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%d bytes) to %s\n", showKey(key), size, outPath)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&outPath, "output", "o", "", "write to FILE instead of standard output")
	return cmd
}

func objstoreRmCmd(f *objstoreFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rm KEY",
		Short: "Delete KEY (deleting a missing key is not an error)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := parseKey(args[0])
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, st objstore.Store) error {
				if err := st.Delete(ctx, key); err != nil {
					return explain(err, "rm")
				}
				return nil
			})
		},
	}
}

// explain turns an adapter error into a plain-words diagnosis. It uses
// only the error's code, status, service code and transport cause, none
// of which carries a secret. A missing object wraps errNotFound.
func explain(err error, what string) error {
	var oe *objstore.Error
	if !errors.As(err, &oe) {
		return err
	}
	prefix := ""
	if what != "" {
		prefix = what + " failed: "
	}
	reason := diagnose(oe)
	if oe.Code == objstore.CodeFileNotFound {
		return fmt.Errorf("%s%s: %w", prefix, reason, errNotFound)
	}
	if oe.Op == "INIT" {
		return errors.New(prefix + reason)
	}
	return fmt.Errorf("%s%s\n  detail: %v", prefix, reason, err)
}

func diagnose(e *objstore.Error) string {
	switch e.Code {
	case objstore.CodeInvalidParams:
		if e.Op == "INIT" {
			return "the configuration is incomplete or invalid: " + e.Msg
		}
		return "invalid argument: " + e.Msg
	case objstore.CodeFileNotFound:
		if e.Key != "" {
			return fmt.Sprintf("object %s does not exist", showKey(e.Key))
		}
		return "object does not exist"
	case objstore.CodeInternalError:
		return "internal error: " + e.Msg
	}
	switch e.ServiceCode {
	case "SignatureDoesNotMatch":
		return "the server rejected the request signature: the secret access key is wrong for this access key id (or the region does not match the server's)"
	case "InvalidAccessKeyId", "XAdminUserNotFound":
		return "the server does not know this access key id"
	case "RequestTimeTooSkewed":
		return "clock skew: this machine's clock differs from the server's by too much (more than 15 minutes); fix the time (NTP) and retry"
	case "NoSuchBucket":
		return "the bucket does not exist (check MOONCAKE_S3_BUCKET / MOONCAKE_OSS_BUCKET)"
	case "AccessDenied", "AllAccessDisabled":
		return "permission denied: these credentials may not use this bucket or prefix (need put, get, delete and list)"
	case "ExpiredToken", "InvalidToken", "TokenRefreshRequired", "SecurityTokenExpired", "InvalidSecurityToken":
		return "the session token is expired or invalid; get new temporary credentials"
	case "AuthorizationHeaderMalformed", "AuthorizationQueryParametersError":
		return "the server rejected the authorization header; the region is probably wrong"
	case "PermanentRedirect":
		return "the bucket lives in another region or endpoint; fix the region or endpoint"
	}
	if e.Err != nil {
		return transportReason(e.Err)
	}
	switch {
	case e.Status == 403:
		return "access denied (HTTP 403)"
	case e.Status == 301 || e.Status == 307:
		return fmt.Sprintf("the server redirects (HTTP %d): wrong region or endpoint, or virtual-host vs path style (MOONCAKE_S3_PATH_STYLE)", e.Status)
	case e.Status == 400:
		return "the server rejected the request as malformed (HTTP 400)"
	case e.Status >= 500:
		return fmt.Sprintf("the server failed (HTTP %d); it may be overloaded or down", e.Status)
	case e.Code == objstore.CodeDFSServiceUnavailable:
		return "the service did not answer properly: " + e.Msg
	case e.Status != 0:
		return fmt.Sprintf("unexpected answer HTTP %d", e.Status)
	}
	return e.Msg
}

// transportReason names a network failure in plain words.
func transportReason(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dns):
		return fmt.Sprintf("DNS failure: cannot resolve host %q (check the endpoint)", dns.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens at the endpoint's host and port"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the endpoint's host is unreachable (routing or firewall)"
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		return "TLS certificate check failed for the endpoint: " + err.Error()
	case errors.As(err, &recErr):
		return "TLS handshake failed: the endpoint probably speaks plain http, not https"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out waiting for the server"
	case errors.As(err, &op) && op.Timeout():
		return "connect timed out: the endpoint does not answer (firewall or wrong address)"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection mid-request (is the endpoint an S3 server? http vs https?)"
	}
	return "network failure: " + err.Error()
}
