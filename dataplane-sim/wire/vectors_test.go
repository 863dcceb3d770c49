package wire

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// vector is one frame of shared/vectors/roce-third-party.txt.
type vector struct {
	name, facts string
	frame       []byte
}

// sharedDir walks up from the package directory to the directory that holds
// shared/ and returns shared's path, or "" when there is none.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "vectors")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return filepath.Join(dir, "shared")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// loadVectors parses the vectors file. It skips the test when shared/ is
// absent, unless LHCNP_ORACLES=required, when it fails.
func loadVectors(t testing.TB) []vector {
	t.Helper()
	dir := sharedDir(t)
	if dir == "" {
		if os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatal("shared/vectors not found above the package directory and LHCNP_ORACLES=required")
		}
		t.Skip("shared/vectors not found above the package directory")
	}
	f, err := os.Open(filepath.Join(dir, "vectors", "roce-third-party.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("vectors: line %q has no key", line)
		}
		val = strings.TrimSpace(val)
		switch key {
		case "name":
			vs = append(vs, vector{name: val})
		case "facts":
			vs[len(vs)-1].facts = val
		case "hex":
			b, err := hex.DecodeString(val)
			if err != nil {
				t.Fatalf("vectors: %s: %v", vs[len(vs)-1].name, err)
			}
			vs[len(vs)-1].frame = b
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatal("vectors: no frames in the file")
	}
	return vs
}

// TestVectors decodes every third-party frame, checks the facts the file
// states for it, and re-encodes it byte for byte.
func TestVectors(t *testing.T) {
	// The facts of each vector, as the file states them. A vector without an
	// entry fails the test, so a new one is not silently ignored.
	checks := map[string]func(t *testing.T, f *Frame){
		"cnp-connectx4lx-ipv4": func(t *testing.T, f *Frame) {
			frWant(t, "kind", f.Kind, KindCNP)
			frWant(t, "tos", f.IPv4.TOS, uint8(0xc2))
			frWant(t, "ttl", f.IPv4.TTL, uint8(64))
			frWant(t, "df", f.IPv4.DF, true)
			frWant(t, "sport", f.UDP.SrcPort, uint16(0))
			frWant(t, "udp checksum", f.UDP.Checksum, uint16(0))
			frWant(t, "udp checksum status", f.UDP.ChecksumStatus, StatusNone)
			frWant(t, "opcode", f.BTH.Opcode, OpCNP)
			frWant(t, "byte4", f.BTH.Byte4, uint8(0x40))
			frWant(t, "becn", f.BTH.BECN(), true)
			frWant(t, "pkey", f.BTH.PKey, uint16(0xffff))
			frWant(t, "destqp", f.BTH.DestQP, uint32(0x118))
			frWant(t, "reserved", string(f.Payload), string(make([]byte, 16)))
			frWant(t, "icrc", f.ICRC, uint32(0x2a00fd82))
		},
		"cnp-mellanox-example-ipv4": func(t *testing.T, f *Frame) {
			frWant(t, "kind", f.Kind, KindCNP)
			frWant(t, "tos", f.IPv4.TOS, uint8(0x89))
			frWant(t, "ttl", f.IPv4.TTL, uint8(0x20))
			frWant(t, "df", f.IPv4.DF, true)
			frWant(t, "sport", f.UDP.SrcPort, uint16(56238))
			frWant(t, "udp checksum", f.UDP.Checksum, uint16(0))
			frWant(t, "destqp", f.BTH.DestQP, uint32(0xd2))
			frWant(t, "icrc", f.ICRC, uint32(0xef1bfcda))
		},
		"uc-send-only-ipv4": func(t *testing.T, f *Frame) {
			frWant(t, "kind", f.Kind, KindRoCEData)
			frWant(t, "ip checksum", f.IPv4.Checksum, uint16(0xb4d5))
			frWant(t, "ip checksum status", f.IPv4.ChecksumStatus, StatusGood)
			frWant(t, "udp checksum", f.UDP.Checksum, uint16(0xaca2))
			frWant(t, "udp checksum status", f.UDP.ChecksumStatus, StatusGood)
			frWant(t, "opcode", f.BTH.Opcode, OpUCSendOnly)
			frWant(t, "destqp", f.BTH.DestQP, uint32(0xd3))
			frWant(t, "payload+pad", len(f.Payload)+len(f.Pad), 20)
			frWant(t, "icrc", f.ICRC, uint32(0xf353f378))
		},
		"uc-send-only-ipv6": func(t *testing.T, f *Frame) {
			frWant(t, "kind", f.Kind, KindRoCEData)
			frWant(t, "traffic class", f.IPv6.TrafficClass, uint8(0xe2))
			frWant(t, "flow label", f.IPv6.FlowLabel, uint32(0x1face))
			frWant(t, "hop limit", f.IPv6.HopLimit, uint8(255))
			frWant(t, "udp checksum", f.UDP.Checksum, uint16(0xe7c5))
			frWant(t, "udp checksum status", f.UDP.ChecksumStatus, StatusGood)
			frWant(t, "opcode", f.BTH.Opcode, OpUCSendOnly)
			frWant(t, "destqp", f.BTH.DestQP, uint32(0xd3))
			frWant(t, "icrc", f.ICRC, uint32(0x3b745b3e))
		},
	}
	for _, v := range loadVectors(t) {
		t.Run(v.name, func(t *testing.T) {
			check, ok := checks[v.name]
			if !ok {
				t.Fatalf("no facts checked for vector %q (facts: %s)", v.name, v.facts)
			}
			var d Decoder
			var f Frame
			if err := d.Decode(v.frame, &f); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			frWant(t, "icrc status", f.ICRCStatus, StatusGood)
			frWant(t, "icrc computed", f.ICRCComputed, f.ICRC)
			if f.IPVersion == 4 {
				frWant(t, "ip checksum status", f.IPv4.ChecksumStatus, StatusGood)
			}
			check(t, &f)
			// The ICRC function agrees on the bare IP packet.
			n := EthernetLen
			ip := v.frame[n : len(v.frame)-len(f.Trailer)]
			got, err := ICRC(ip)
			if err != nil {
				t.Fatalf("ICRC: %v", err)
			}
			frWant(t, "ICRC()", got, f.ICRC)

			// Re-encode from the decoded fields.
			var e Encoder
			a := f.Addressing()
			buf := make([]byte, 2048)
			var m int
			switch f.Kind {
			case KindCNP:
				m, err = e.CNP(buf, &a, &CNP{DestQP: f.BTH.DestQP, PKey: f.BTH.PKey})
			case KindRoCEData:
				m, err = e.RoCE(buf, &a, &f.BTH, &f.Transport, f.Payload)
			default:
				t.Fatalf("no encoder for kind %v", f.Kind)
			}
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(buf[:m], v.frame) {
				t.Errorf("re-encoded frame differs:\n got %x\nwant %x", buf[:m], v.frame)
			}
		})
	}
}

// frWant fails the test when got != want.
func frWant[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestICRCSeed checks the constant CRC state after the 8 bytes of 0xFF.
func TestICRCSeed(t *testing.T) {
	got := crc32.ChecksumIEEE(icrcOnes[:])
	if got != icrcSeed {
		t.Fatalf("crc of 8 x 0xff = %#x, icrcSeed = %#x", got, icrcSeed)
	}
}

// errorsIs is errors.Is, named for the tests.
func errorsIs(err, target error) bool { return errors.Is(err, target) }

// frTime is a fixed time for timestamp tests.
var frTime = time.Date(2026, 7, 1, 12, 0, 0, 123456789, time.UTC)
