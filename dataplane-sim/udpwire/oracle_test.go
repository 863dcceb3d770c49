package udpwire

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// needTshark returns tshark's path, skipping the test when it is missing
// unless LHCNP_ORACLES=required (as make test sets).
func needTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatal("tshark not found and LHCNP_ORACLES=required (run scripts/deps.sh)")
		}
		t.Skip("tshark not found")
	}
	return p
}

// recordingWire keeps every datagram it would send, with what the model
// says the frame is, and delivers nothing.
type recordingWire struct {
	c     *codec
	vni   uint32
	dgram [][]byte
	want  []string
}

func (w *recordingWire) Send(l *netsim.Link, p *netsim.Packet, txEnd engine.Time) {
	w.record(p, txEnd)
	l.From().Node().(*netsim.Switch).Network().FreePacket(p)
}

func (w *recordingWire) record(p *netsim.Packet, txEnd engine.Time) {
	m := Meta{SentAt: txEnd, Seq: uint32(len(w.dgram) + 1)}
	frame, err := w.c.appendFrame(nil, p, &m)
	if err != nil {
		panic(err)
	}
	w.dgram = append(w.dgram, AppendData(nil, w.vni, &m, frame))
	switch p.Kind {
	case netsim.KindPFC:
		w.want = append(w.want, "pfc")
	default:
		w.want = append(w.want, fmt.Sprintf("%#02x/%d", uint8(p.Opcode()), p.DestQP()))
	}
}

// TestTsharkReadsTheWire: datagrams of the wire, as a capture of the
// loopback would hold them (Ethernet, IPv4, UDP between the wire's ports),
// are dissected by tshark, told the port is Geneve as docs/lab.md says,
// as Geneve with our option class and VNI around the
// frames: every RoCEv2 opcode and destination QP, and the PFC frames, are
// what the model sent.
func TestTsharkReadsTheWire(t *testing.T) {
	tshark := needTshark(t)
	sim := engine.New(engine.WithSeed(3))
	h := buildHalves(t, sim, "")
	rec := &recordingWire{c: newCodec(h.net), vni: 4242}
	for _, pt := range h.wan {
		pt.Out().SetWire(&teeWire{rec: rec, to: pt.Out()})
	}
	sim.Run(3 * engine.Millisecond)
	dgrams, want := rec.dgram, rec.want
	if len(dgrams) == 0 {
		t.Fatal("nothing crossed the wire")
	}

	var buf bytes.Buffer
	pw, err := wire.NewPcapWriter(&buf, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dgrams {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IPv4(127, 0, 0, 1), DstIP: net.IPv4(127, 0, 0, 1)}
		udp := &layers.UDP{SrcPort: 47004, DstPort: 47003}
		if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		sb := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			eth, ip, udp, gopacket.Payload(d)); err != nil {
			t.Fatal(err)
		}
		if err := pw.WritePacket(time.Unix(1, int64(i)*1000), sb.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "wire.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-r", path, "-d", "udp.port==47003,geneve", "-T", "fields", "-E", "separator=|",
		"-e", "geneve.vni", "-e", "geneve.option.class", "-e", "geneve.proto_type",
		"-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "macc.opcode").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(dgrams) {
		t.Fatalf("tshark printed %d lines for %d datagrams:\n%s", len(lines), len(dgrams), out)
	}
	kinds := map[string]bool{}
	for i, line := range lines {
		f := strings.Split(line, "|")
		if vni, _ := strconv.ParseUint(f[0], 0, 32); vni != 4242 || f[1] != "0xfff0" || f[2] != "0x6558" {
			t.Fatalf("datagram %d: geneve vni/class/protocol %q, want 4242, 0xfff0, 0x6558", i, line)
		}
		var got string
		if f[5] == "0x0101" {
			got = "pfc"
		} else {
			op, _ := strconv.ParseUint(f[3], 0, 8)
			qp, _ := strconv.ParseUint(f[4], 0, 32)
			got = fmt.Sprintf("%#02x/%d", op, qp)
		}
		if got != want[i] {
			t.Errorf("datagram %d: tshark reads %s (%q), the model sent %s", i, got, line, want[i])
		}
		kinds[strings.Split(want[i], "/")[0]] = true
	}
	for _, k := range []string{"pfc", "0x81", "0x11", "0x64", "0x06", "0x07"} {
		if !kinds[k] {
			t.Errorf("no frame of kind %s in the capture (%v)", k, kinds)
		}
	}
}

// teeWire records what it carries and delivers it back to the same link.
type teeWire struct {
	rec *recordingWire
	to  *netsim.Link
}

func (w *teeWire) Send(l *netsim.Link, p *netsim.Packet, txEnd engine.Time) {
	w.rec.record(p, txEnd)
	w.to.SetWire(nil)
	w.to.Arrive(p, txEnd)
	w.to.SetWire(w)
}

// sizeWire records every frame it carries (as the codec writes it, FCS
// excluded) with the model's SizeBytes, and delivers the packet back to
// the same link.
type sizeWire struct {
	c      *codec
	to     *netsim.Link
	frames [][]byte
	sizes  []int32
}

func (w *sizeWire) Send(l *netsim.Link, p *netsim.Packet, txEnd engine.Time) {
	var m Meta
	frame, err := w.c.appendFrame(nil, p, &m)
	if err != nil {
		panic(err)
	}
	w.frames, w.sizes = append(w.frames, frame), append(w.sizes, p.SizeBytes)
	w.to.SetWire(nil)
	w.to.Arrive(p, txEnd)
	w.to.SetWire(w)
}

// TestTsharkFrameLengthIsSizeBytes: tshark, reading the frames the wire
// carries (every kind: data, ACK, CNP, CM, PFC) from a capture, finds each
// as long as the model sized it, less the 4-byte FCS a capture leaves
// out, over IPv4 and over IPv6 (whose header is 20 bytes longer: the model
// once sized IPv6 packets as IPv4 ones).
func TestTsharkFrameLengthIsSizeBytes(t *testing.T) {
	tshark := needTshark(t)
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "ipv4", true: "ipv6"}[v6], func(t *testing.T) {
			sim := engine.New(engine.WithSeed(3))
			h := buildHalvesOf(t, sim, "", v6)
			c := newCodec(h.net)
			var ws []*sizeWire
			for _, pt := range h.wan {
				w := &sizeWire{c: c, to: pt.Out()}
				pt.Out().SetWire(w)
				ws = append(ws, w)
			}
			sim.Run(3 * engine.Millisecond)
			var buf bytes.Buffer
			pw, err := wire.NewPcapWriter(&buf, true)
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int32
			for _, w := range ws {
				for i, f := range w.frames {
					if err := pw.WritePacket(time.Unix(1, int64(len(sizes))*1000), f); err != nil {
						t.Fatal(err)
					}
					sizes = append(sizes, w.sizes[i])
				}
			}
			path := filepath.Join(t.TempDir(), "frames.pcap")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tshark, "-r", path, "-T", "fields", "-E", "separator=|",
				"-e", "frame.len", "-e", "ip.version", "-e", "ipv6.version", "-e", "infiniband.bth.opcode", "-e", "macc.opcode").Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != len(sizes) || len(sizes) == 0 {
				t.Fatalf("tshark printed %d lines for %d frames", len(lines), len(sizes))
			}
			kinds := map[string]int{}
			for i, line := range lines {
				f := strings.Split(line, "|")
				n, err := strconv.Atoi(f[0])
				if err != nil {
					t.Fatalf("frame %d: %q", i, line)
				}
				kind := "pfc" // a MAC control frame, else the BTH opcode
				if f[4] == "" {
					op, _ := strconv.ParseUint(f[3], 0, 8)
					kind = fmt.Sprintf("%#02x", op)
				}
				if kind != "pfc" && (f[1] == "6" || f[2] == "6") != v6 {
					t.Errorf("frame %d (%s): ip version %q/%q, want ipv6 %v", i, kind, f[1], f[2], v6)
				}
				if int32(n)+netsim.FCSBytes != sizes[i] && kinds["bad "+kind] == 0 {
					kinds["bad "+kind]++
					t.Errorf("frame %d (opcode %s): tshark reads %d bytes + 4 FCS, the model sized it %d", i, kind, n, sizes[i])
				}
				kinds[kind]++
			}
			for _, k := range []string{"pfc", "0x81", "0x11", "0x64", "0x06", "0x07"} {
				if kinds[k] == 0 {
					t.Errorf("no frame of kind %s in the capture (%v)", k, kinds)
				}
			}
		})
	}
}
