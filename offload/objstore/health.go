package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"strconv"
)

// HealthProbeBody is what CheckHealth writes and expects to read back.
const HealthProbeBody = "health_check"

// HealthProbePrefix starts every probe key.
const HealthProbePrefix = ".mooncake_health_probe_"

// CheckHealth runs the reference health check on s: PUT a probe key
// ".mooncake_health_probe_<u64>-<u64>" holding "health_check" (a failed
// PUT is returned as is and nothing is deleted), GET its 12 bytes, then
// DELETE it best-effort. A failed read or a content mismatch is
// DFS_SERVICE_UNAVAILABLE. The wire sequence is exactly PUT, GET, DELETE.
func CheckHealth(ctx context.Context, s Store, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	key := HealthProbePrefix + strconv.FormatUint(binary.BigEndian.Uint64(rnd[:8]), 10) + "-" +
		strconv.FormatUint(binary.BigEndian.Uint64(rnd[8:]), 10)
	if err := s.Put(ctx, key, []byte(HealthProbeBody)); err != nil {
		return err
	}
	buf := make([]byte, len(HealthProbeBody))
	n, gerr := s.Get(ctx, key, buf)
	if derr := s.Delete(context.WithoutCancel(ctx), key); derr != nil {
		log.Warn("health probe delete failed", "err", derr)
	}
	if gerr != nil || n != len(buf) || !bytes.Equal(buf, []byte(HealthProbeBody)) {
		msg := "health probe did not read back"
		if gerr != nil {
			msg += ": " + gerr.Error()
		}
		return &Error{Code: CodeDFSServiceUnavailable, Op: "HEALTH", Key: key, Msg: msg}
	}
	return nil
}
