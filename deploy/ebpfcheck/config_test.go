package ebpfcheck

import (
	"os"
	"regexp"
	"testing"

	"github.com/cloudflare/ebpf_exporter/v2/config"
)

// keySize is sizeof(struct port_key) in ferry-tcp.bpf.c.
const keySize = 8

// dir is the folder the exporter is pointed at with --config.dir.
const dir = "../ebpf_exporter"

// knownDecoders are the label decoders this configuration may use.
var knownDecoders = map[string]bool{"uint": true, "static_map": true}

func TestConfigParsesAndMatchesProgram(t *testing.T) {
	cfgs, err := config.ParseConfigs(dir, []string{"ferry-tcp"})
	if err != nil {
		t.Fatalf("ebpf_exporter cannot parse ferry-tcp.yaml: %v", err)
	}
	src, err := os.ReadFile(dir + "/ferry-tcp.bpf.c")
	if err != nil {
		t.Fatal(err)
	}
	counters := cfgs[0].Metrics.Counters
	if len(counters) != 3 {
		t.Fatalf("got %d counters, want 3", len(counters))
	}
	for _, c := range counters {
		// The exporter reads each metric from the BPF map of the same name.
		mapDecl := regexp.MustCompile(`\}\s*` + regexp.QuoteMeta(c.Name) + `\s+SEC\("\.maps"\)`)
		if !mapDecl.Match(src) {
			t.Errorf("counter %s has no BPF map of that name in ferry-tcp.bpf.c", c.Name)
		}
		var size uint
		for _, l := range c.Labels {
			size += l.Size + l.Padding
			for _, d := range l.Decoders {
				if !knownDecoders[d.Name] {
					t.Errorf("counter %s label %s: unexpected decoder %q", c.Name, l.Name, d.Name)
				}
			}
		}
		if size != keySize {
			t.Errorf("counter %s labels cover %d bytes, the BPF map key has %d", c.Name, size, keySize)
		}
	}
}
