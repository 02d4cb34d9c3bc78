package metadata

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Client sends one handshake request per connection to a peer's daemon.
// The zero value uses Mooncake's defaults. A Client is safe for concurrent
// use.
type Client struct {
	// ConnectTimeout bounds the dial (MC_HANDSHAKE_CONNECT_TIMEOUT).
	ConnectTimeout time.Duration
	// ReadTimeout caps the whole exchange after the dial.
	ReadTimeout time.Duration
	// MaxFrameLength caps the reply frame (MC_HANDSHAKE_MAX_LENGTH).
	MaxFrameLength uint64
}

// Call sends a frame of type typ with body to the daemon of the segment
// named name ("host:port") and returns the reply body, which the caller
// owns. body is not retained. It closes the connection as soon as the
// reply frame is read, without waiting for the peer's FIN. Errors wrap
// ErrInvalidName, ErrUnreachable (dial failure, timeout), ErrRejected (the
// peer closed without a reply, or replied with another type), or the
// frame errors of ReadFrame.
func (c *Client) Call(ctx context.Context, name string, typ FrameType, body []byte) ([]byte, error) {
	host, port, err := SplitSegmentName(name)
	if err != nil {
		return nil, err
	}
	ct := c.ConnectTimeout
	if ct <= 0 {
		ct = DefaultConnectTimeout
	}
	rt := c.ReadTimeout
	if rt <= 0 {
		rt = DefaultReadTimeout
	}
	d := net.Dialer{Timeout: ct}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: dial %s: %w", ErrUnreachable, name, ctx.Err())
		}
		return nil, fmt.Errorf("%w: dial %s: %v", ErrUnreachable, name, err)
	}
	defer conn.Close()
	deadline := time.Now().Add(rt)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if err := WriteFrame(conn, typ, body); err != nil {
		return nil, c.wrapIO(ctx, name, err)
	}
	rtyp, reply, err := ReadFrame(conn, c.MaxFrameLength)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s closed the connection without a reply to a %v frame", ErrRejected, name, typ)
		}
		return nil, c.wrapIO(ctx, name, err)
	}
	if rtyp != typ {
		return nil, fmt.Errorf("%w: %s answered a %v frame with a %v frame", ErrRejected, name, typ, rtyp)
	}
	return reply, nil
}

func (c *Client) wrapIO(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, name, ctx.Err())
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return fmt.Errorf("%w: %s: %w", ErrUnreachable, name, context.DeadlineExceeded)
		}
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, name, err)
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%w: %s dropped the connection: %v", ErrRejected, name, err)
	}
	if errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrTruncated) || errors.Is(err, ErrBadFrame) {
		return fmt.Errorf("reply from %s: %w", name, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnreachable, name, err)
}

// FetchDesc sends local (the caller's own encoded descriptor, as Mooncake
// does; it may be ProbeRequestBody-like "{}\n") in a Metadata frame and
// returns the peer's validated descriptor.
func (c *Client) FetchDesc(ctx context.Context, name string, local []byte) (*SegmentDesc, error) {
	reply, err := c.Call(ctx, name, FrameMetadata, local)
	if err != nil {
		return nil, err
	}
	d, err := DecodeDesc(reply)
	if err != nil {
		return nil, fmt.Errorf("descriptor from %s: %w", name, err)
	}
	return d, nil
}

// SendNotify delivers n to the daemon of segment name and checks that it
// acknowledged with notify_msg "success".
func (c *Client) SendNotify(ctx context.Context, name string, n Notify) error {
	reply, err := c.Call(ctx, name, FrameNotify, AppendNotify(nil, n))
	if err != nil {
		return err
	}
	ack, err := DecodeNotify(reply)
	if err != nil {
		return fmt.Errorf("notify reply from %s: %w", name, err)
	}
	if ack.NotifyMsg != "success" {
		return fmt.Errorf("%w: %s answered notify with %q", ErrRejected, name, ack.NotifyMsg)
	}
	return nil
}

// Probe checks that the daemon of segment name answers a Probe with
// {"status":"success"}.
func (c *Client) Probe(ctx context.Context, name string) error {
	reply, err := c.Call(ctx, name, FrameProbe, ProbeRequestBody)
	if err != nil {
		return err
	}
	var st struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(bytes.NewReader(reply)).Decode(&st); err != nil {
		return fmt.Errorf("%w: probe reply from %s: %v", ErrMalformedJSON, name, err)
	}
	if st.Status != "success" {
		return fmt.Errorf("%w: %s answered probe with status %q", ErrRejected, name, st.Status)
	}
	return nil
}
