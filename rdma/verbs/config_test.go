package verbs

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestConfigDefaults(t *testing.T) {
	c := ConfigFromEnv(envOf(nil), slog.New(slog.DiscardHandler))
	if c != DefaultConfig() {
		t.Fatalf("empty env gives %+v", c)
	}
	want := Config{IBPort: 1, GIDIndex: -1, MTU: MTU4096, TrafficClass: -1, ServiceLevel: -1,
		MaxWR: 256, MaxSGE: 4, MaxInline: 64, MaxCQE: 4096}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
}

func TestConfigFromEnv(t *testing.T) {
	c := ConfigFromEnv(envOf(map[string]string{
		"MC_IB_PORT": "2", "MC_GID_INDEX": "3", "NCCL_IB_GID_INDEX": "5", "MC_MTU": "1024",
		"MC_IB_TC": "106", "MC_IB_SL": "3", "MC_MAX_WR": " 128 ", "MC_MAX_SGE": "2",
		"MC_MAX_INLINE": "0", "MC_MAX_CQE_PER_CTX": "8192", "MC_PKEY_INDEX": "1",
	}), nil)
	want := Config{IBPort: 2, GIDIndex: 3, MTU: MTU1024, TrafficClass: 106, ServiceLevel: 3,
		MaxWR: 128, MaxSGE: 2, MaxInline: 0, MaxCQE: 8192, PKeyIndex: 1}
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	c = ConfigFromEnv(envOf(map[string]string{"NCCL_IB_GID_INDEX": "5"}), nil)
	if c.GIDIndex != 5 {
		t.Fatalf("NCCL_IB_GID_INDEX fallback: %d", c.GIDIndex)
	}
}

func TestConfigInvalidValuesWarnAndDefault(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	bad := map[string]string{
		"MC_IB_PORT": "0", "MC_GID_INDEX": "-2", "MC_MTU": "9000", "MC_IB_TC": "256",
		"MC_IB_SL": "16", "MC_MAX_WR": "lots", "MC_MAX_SGE": "0", "MC_MAX_INLINE": "-1",
		"MC_MAX_CQE_PER_CTX": "0", "MC_PKEY_INDEX": "70000",
	}
	c := ConfigFromEnv(envOf(bad), log)
	if c != DefaultConfig() {
		t.Fatalf("invalid env gives %+v; want defaults", c)
	}
	for k := range bad {
		if !strings.Contains(logs.String(), "var="+k) {
			t.Errorf("no warning names %s:\n%s", k, logs.String())
		}
	}
	c = ConfigFromEnv(envOf(map[string]string{"MC_MTU": "256"}), slog.New(slog.DiscardHandler))
	if c.MTU != MTU4096 {
		t.Fatalf("MC_MTU=256 accepted as %v; Mooncake accepts 512..4096", c.MTU)
	}
}

func TestConfigClamp(t *testing.T) {
	c := DefaultConfig().Clamp(DeviceAttr{MaxQPWR: 100, MaxSGE: 2, MaxCQE: 1000})
	if c.MaxWR != 100 || c.MaxSGE != 2 || c.MaxCQE != 1000 {
		t.Fatalf("clamped %+v", c)
	}
	if c2 := DefaultConfig().Clamp(DeviceAttr{}); c2 != DefaultConfig() {
		t.Fatalf("zero limits changed config: %+v", c2)
	}
	caps := c.QPCaps()
	if caps != (QPCaps{MaxSendWR: 100, MaxRecvWR: 100, MaxSGE: 2, MaxInline: 64}) {
		t.Fatalf("caps %+v", caps)
	}
	if m := DefaultConfig().PathMTU(MTU1024); m != MTU1024 {
		t.Fatalf("PathMTU(1024) = %v", m)
	}
	if m := DefaultConfig().PathMTU(0); m != MTU4096 {
		t.Fatalf("PathMTU(unknown) = %v", m)
	}
}

func TestTypes(t *testing.T) {
	for n, m := range map[int]MTU{256: MTU256, 512: MTU512, 1024: MTU1024, 2048: MTU2048, 4096: MTU4096} {
		if m.Bytes() != n {
			t.Errorf("%v.Bytes() = %d", m, m.Bytes())
		}
		if got, ok := MTUFromBytes(n); !ok || got != m {
			t.Errorf("MTUFromBytes(%d) = %v, %v", n, got, ok)
		}
	}
	if _, ok := MTUFromBytes(1500); ok {
		t.Error("MTUFromBytes(1500) ok")
	}
	if StatusRetryExcErr.String() != "RETRY_EXC_ERR" || StatusWRFlushErr != 5 || StatusTMRndvIncomplete != 23 {
		t.Errorf("status values drifted from ibv_wc_status: %v=%d", StatusRetryExcErr, StatusRetryExcErr)
	}
	if !StatusLocProtErr.IsLocal() || StatusRemAccessErr.IsLocal() {
		t.Error("IsLocal wrong")
	}
	if EventGIDChange != 18 || EventPortErr.String() != "PORT_ERR" || QPStateErr.String() != "ERR" {
		t.Error("event/state values drifted")
	}
	if AccessRelaxedOrdering != 1<<20 || QPAccessDefault != 15 {
		t.Error("access values drifted")
	}
	c := Completion{WRID: 7, QPNum: 3, Status: StatusRemAccessErr}
	err := c.Err()
	var ce *CompletionError
	if err == nil || !errorsAs(err, &ce) || ce.WRID != 7 || !strings.Contains(err.Error(), "REM_ACCESS_ERR") {
		t.Fatalf("Completion.Err() = %v", err)
	}
	if (&Completion{}).Err() != nil {
		t.Fatal("success completion has an error")
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
