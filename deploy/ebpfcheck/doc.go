// Package ebpfcheck keeps Ferry's ebpf_exporter configuration in
// deploy/ebpf_exporter (ferry-tcp.yaml and ferry-tcp.bpf.c) valid: its
// tests parse the YAML with the exporter's own config package and check it
// against the BPF program. The configuration is an operator artifact, not
// code Ferry runs.
package ebpfcheck
