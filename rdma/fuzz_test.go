package rdma

import (
	"strings"
	"testing"
)

func FuzzDecodeHandshake(f *testing.F) {
	f.Add([]byte(`{"local_gid":"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:01:00:01","local_lid":1,"local_nic_path":"10.0.0.1:15000@mlx5_0","peer_nic_path":"10.0.0.2:15001@mlx5_1","qp_num":[257,258]}`))
	f.Add([]byte(`{"reply_msg":"no"}`))
	f.Add([]byte(`{"local_nic_path":"@","qp_num":[1]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := DecodeHandshake(body)
		if err != nil {
			return
		}
		back, err := DecodeHandshake(EncodeHandshake(&d))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if back.LocalNICPath != d.LocalNICPath || back.PeerNICPath != d.PeerNICPath || len(back.QPNum) != len(d.QPNum) || back.ReadyAck != d.ReadyAck {
			t.Fatalf("round trip changed %+v to %+v", d, back)
		}
	})
}

// FuzzParsePeerAffinity checks that any MC_NIC_PEER_AFFINITY value parses
// without a panic into rules whose names are trimmed, non-empty and free
// of the separators.
func FuzzParsePeerAffinity(f *testing.F) {
	for _, s := range []string{"", "mlx5_0=mlx5_0,mlx5_1;mlx5_1=mlx5_2", " a = b ; ;=c; d=", "x=y,,z;x=w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for local, peers := range ParsePeerAffinity(s, nil) {
			names := append([]string{local}, peers...)
			if len(peers) == 0 {
				t.Fatalf("%q: rule for %q names no peer", s, local)
			}
			for _, n := range names {
				if n == "" || strings.TrimSpace(n) != n || strings.ContainsAny(n, ";=,") {
					t.Fatalf("%q: bad name %q in %q -> %v", s, n, local, peers)
				}
			}
		}
	})
}
