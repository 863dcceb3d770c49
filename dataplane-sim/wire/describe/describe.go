// Package describe turns a decoded wire.Frame into an ordered list of named
// fields, and writes them as one text line or one JSON object per frame: the
// output of `lhcnp decode`. Keys are stable (layer.field, lower case), so
// scripts can rely on them.
//
// It depends on the wire package only.
package describe

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Field is one named value: a string, bool, or an integer type.
type Field struct {
	Key   string
	Value any
}

// Fields lists every field of f, outermost layer first.
func Fields(f *wire.Frame) []Field {
	var d fields
	d.add("format", f.Kind.String())
	d.add("eth.src", f.Eth.Src.String())
	d.add("eth.dst", f.Eth.Dst.String())
	if f.Eth.VLAN.Present {
		d.add("vlan.id", f.Eth.VLAN.ID)
		d.add("vlan.pcp", f.Eth.VLAN.PCP)
		d.add("vlan.dei", f.Eth.VLAN.DEI)
	}
	d.add("eth.type", fmt.Sprintf("0x%04x", f.Eth.EtherType))
	if f.Tunneled {
		d.ipv6("outer", &f.Outer)
	}
	switch f.IPVersion {
	case 4:
		h := &f.IPv4
		d.add("ipv4.src", h.Src.String())
		d.add("ipv4.dst", h.Dst.String())
		d.add("ipv4.dscp", h.TOS>>2)
		d.add("ipv4.ecn", ecn(h.TOS))
		d.add("ipv4.total_len", h.TotalLen)
		d.add("ipv4.id", h.ID)
		d.add("ipv4.df", h.DF)
		d.add("ipv4.ttl", h.TTL)
		d.add("ipv4.proto", h.Protocol)
		if len(h.Options) > 0 {
			d.add("ipv4.options", hex.EncodeToString(h.Options))
		}
		d.add("ipv4.checksum", fmt.Sprintf("0x%04x", h.Checksum))
		d.add("ipv4.checksum_status", h.ChecksumStatus.String())
	case 6:
		d.ipv6("ipv6", &f.IPv6)
	}
	if f.HasFastCNP {
		o := &f.FastCNP
		d.add("fastcnp.orig_dst", addr16(o.OrigDst))
		d.add("fastcnp.ioam", o.IOAM)
		if o.IOAM {
			d.add("fastcnp.ioam_opt_type", o.IOAMOptType)
			d.add("fastcnp.ioam_data", hex.EncodeToString(o.IOAMData))
		}
	}
	if f.IPVersion != 0 && f.Kind != wire.KindLongHaulICMPv6 && f.UDP.DstPort != 0 {
		d.add("udp.sport", f.UDP.SrcPort)
		d.add("udp.dport", f.UDP.DstPort)
		d.add("udp.len", f.UDP.Length)
		d.add("udp.checksum", fmt.Sprintf("0x%04x", f.UDP.Checksum))
		d.add("udp.checksum_status", f.UDP.ChecksumStatus.String())
	}
	switch f.Kind {
	case wire.KindLongHaulICMPv6:
		d.add("icmpv6.type", f.ICMPv6.Type)
		d.add("icmpv6.code", f.ICMPv6.Code)
		d.add("icmpv6.checksum", fmt.Sprintf("0x%04x", f.ICMPv6.Checksum))
		d.add("icmpv6.checksum_status", f.ICMPv6.ChecksumStatus.String())
		d.longHaul(&f.LongHaul)
	case wire.KindLongHaulRoCE, wire.KindCNP, wire.KindFastCNP, wire.KindRoCEData, wire.KindCM, wire.KindRateAdvice:
		d.bth(&f.BTH)
		d.transport(&f.Transport)
		switch f.Kind {
		case wire.KindLongHaulRoCE:
			d.longHaul(&f.LongHaul)
		case wire.KindRateAdvice:
			r := &f.RateAdvice
			d.add("rate_advice.rate_mbps", r.RateMbps)
			d.add("rate_advice.version", r.Version)
			d.add("rate_advice.dest_qp", r.DestQP)
			d.add("rate_advice.src_qp", r.SrcQP)
		case wire.KindCM:
			d.cm(&f.CM)
		case wire.KindRoCEData:
			d.add("payload.len", len(f.Payload))
			if len(f.Pad) > 0 {
				d.add("pad.len", len(f.Pad))
			}
		}
		d.add("icrc", fmt.Sprintf("0x%08x", f.ICRC))
		d.add("icrc_status", f.ICRCStatus.String())
		if f.ICRCStatus == wire.StatusBad {
			d.add("icrc_computed", fmt.Sprintf("0x%08x", f.ICRCComputed))
		}
	case wire.KindFCN:
		d.add("fcn.flow_label", fmt.Sprintf("0x%05x", f.FCN.FlowLabel))
		d.add("fcn.level", f.FCN.Level)
		if f.FCN.Reserved != 0 {
			d.add("fcn.reserved", f.FCN.Reserved)
		}
	case wire.KindOther:
		d.add("payload.len", len(f.Payload))
	}
	if len(f.Trailer) > 0 {
		d.add("trailer.len", len(f.Trailer))
	}
	return d
}

type fields []Field

func (d *fields) add(k string, v any) { *d = append(*d, Field{k, v}) }

func (d *fields) ipv6(p string, h *wire.IPv6) {
	d.add(p+".src", h.Src.String())
	d.add(p+".dst", h.Dst.String())
	d.add(p+".dscp", h.TrafficClass>>2)
	d.add(p+".ecn", ecn(h.TrafficClass))
	d.add(p+".flow_label", fmt.Sprintf("0x%05x", h.FlowLabel))
	d.add(p+".payload_len", h.PayloadLen)
	d.add(p+".next_header", h.NextHeader)
	d.add(p+".hop_limit", h.HopLimit)
	if h.HopByHop != nil {
		d.add(p+".hop_by_hop", hex.EncodeToString(h.HopByHop))
	}
	if h.Routing != nil {
		d.add(p+".routing", hex.EncodeToString(h.Routing))
	}
	if h.DestOpts != nil {
		d.add(p+".dest_opts", hex.EncodeToString(h.DestOpts))
	}
}

func (d *fields) bth(h *wire.BTH) {
	d.add("bth.opcode", fmt.Sprintf("0x%02x", uint8(h.Opcode)))
	d.add("bth.opcode_name", h.Opcode.String())
	d.add("bth.se", h.SE)
	d.add("bth.migreq", h.MigReq)
	d.add("bth.padcnt", h.PadCount)
	d.add("bth.tver", h.TVer)
	d.add("bth.pkey", fmt.Sprintf("0x%04x", h.PKey))
	d.add("bth.fecn", h.FECN())
	d.add("bth.becn", h.BECN())
	d.add("bth.e", h.E())
	d.add("bth.byte4", fmt.Sprintf("0x%02x", h.Byte4))
	d.add("bth.destqp", h.DestQP)
	d.add("bth.ackreq", h.AckReq)
	d.add("bth.psn", h.PSN)
}

func (d *fields) transport(t *wire.TransportHeaders) {
	if t.Set&wire.HasDETH != 0 {
		d.add("deth.qkey", fmt.Sprintf("0x%08x", t.DETH.QKey))
		d.add("deth.src_qp", t.DETH.SrcQP)
	}
	if t.Set&wire.HasFETH != 0 {
		d.add("feth", fmt.Sprintf("0x%08x", t.FETH))
	}
	if t.Set&wire.HasRETH != 0 {
		d.add("reth.va", fmt.Sprintf("0x%016x", t.RETH.VA))
		d.add("reth.rkey", fmt.Sprintf("0x%08x", t.RETH.RKey))
		d.add("reth.dma_len", t.RETH.DMALen)
	}
	if t.Set&wire.HasAtomicETH != 0 {
		a := &t.AtomicETH
		d.add("atomiceth.va", fmt.Sprintf("0x%016x", a.VA))
		d.add("atomiceth.rkey", fmt.Sprintf("0x%08x", a.RKey))
		d.add("atomiceth.swap_add", a.SwapAdd)
		d.add("atomiceth.compare", a.CompareData)
	}
	if t.Set&wire.HasAETH != 0 {
		d.add("aeth.syndrome", fmt.Sprintf("0x%02x", t.AETH.Syndrome))
		d.add("aeth.msn", t.AETH.MSN)
	}
	if t.Set&wire.HasAtomicAckETH != 0 {
		d.add("atomicacketh.orig", t.AtomicAckETH)
	}
	if t.Set&wire.HasImmDt != 0 {
		d.add("immdt", fmt.Sprintf("0x%08x", t.ImmDt))
	}
	if t.Set&wire.HasIETH != 0 {
		d.add("ieth.rkey", fmt.Sprintf("0x%08x", t.IETH))
	}
}

func (d *fields) longHaul(m *wire.LongHaul) {
	d.add("longhaul.cong_level", m.CongLevel)
	d.add("longhaul.action", m.Action.String())
	if m.ActionReserved != 0 {
		d.add("longhaul.action_reserved", m.ActionReserved)
	}
	d.add("longhaul.parameter", m.Parameter)
	switch m.Action {
	case wire.ActionPause:
		d.add("longhaul.parameter_unit", "us")
	case wire.ActionRateReduce, wire.ActionResume:
		d.add("longhaul.parameter_unit", "percent")
	}
	d.add("longhaul.source_qp", m.SourceQP)
	d.add("longhaul.metric_type", m.MetricType.String())
	d.add("longhaul.metric_value", m.MetricValue)
	if u := m.MetricType.Unit(); u != "" {
		d.add("longhaul.metric_unit", u)
	}
	if !m.ExtPresent {
		return
	}
	d.add("ext.checksum", fmt.Sprintf("0x%04x", m.ExtChecksum))
	d.add("ext.checksum_status", m.ExtChecksumStatus.String())
	d.add("ext.objects", len(m.Objects))
	for i := range m.Objects {
		o := &m.Objects[i]
		p := "ext.object" + strconv.Itoa(i)
		d.add(p+".class_num", o.ClassNum)
		d.add(p+".ctype", o.CType.String())
		d.add(p+".length", o.Len())
		switch {
		case o.CType == wire.CTypeTimestamp && len(o.Data) == 8:
			ntp, _ := o.Timestamp()
			d.add(p+".time", wire.TimeFromNTP(ntp).Format("2006-01-02T15:04:05.000000000Z"))
		case o.CType == wire.CTypeDeviceID && utf8.Valid(o.Data):
			d.add(p+".device_id", string(o.Data))
		default:
			d.add(p+".data", hex.EncodeToString(o.Data))
		}
	}
}

func (d *fields) cm(m *wire.CMMessage) {
	d.add("cm.attr", m.AttrID.String())
	d.add("cm.method", fmt.Sprintf("0x%02x", m.Method))
	d.add("cm.transaction_id", fmt.Sprintf("0x%016x", m.TransactionID))
	d.add("cm.local_comm_id", fmt.Sprintf("0x%08x", m.LocalCommID))
	d.add("cm.remote_comm_id", fmt.Sprintf("0x%08x", m.RemoteCommID))
	switch m.AttrID {
	case wire.CMAttrREQ:
		d.add("cm.service_id", fmt.Sprintf("0x%016x", m.ServiceID))
		d.add("cm.local_ca_guid", fmt.Sprintf("0x%016x", m.LocalCAGUID))
		d.add("cm.local_qpn", m.LocalQPN)
		d.add("cm.starting_psn", m.StartingPSN)
		d.add("cm.pkey", fmt.Sprintf("0x%04x", m.PKey))
		d.add("cm.path_mtu", m.PathMTU)
		d.add("cm.primary_local_gid", wire.GIDAddr(m.PrimaryLocalGID).String())
		d.add("cm.primary_remote_gid", wire.GIDAddr(m.PrimaryRemoteGID).String())
	case wire.CMAttrREP:
		d.add("cm.local_ca_guid", fmt.Sprintf("0x%016x", m.LocalCAGUID))
		d.add("cm.local_qpn", m.LocalQPN)
		d.add("cm.starting_psn", m.StartingPSN)
	case wire.CMAttrDREQ:
		d.add("cm.remote_qpn", m.RemoteQPN)
	case wire.CMAttrREJ:
		d.add("cm.reject_reason", m.RejectReason)
	}
}

func ecn(tos uint8) string {
	return [...]string{"Not-ECT", "ECT(1)", "ECT(0)", "CE"}[tos&3]
}

func addr16(a [16]byte) string {
	return wire.GIDAddr(a).String()
}

// WriteText writes one line: "N time key=value ..." with an error, if any,
// at the end as error="...".
func WriteText(w io.Writer, n int, time string, fs []Field, err error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", n, time)
	for _, f := range fs {
		b.WriteByte(' ')
		b.WriteString(f.Key)
		b.WriteByte('=')
		if s, ok := f.Value.(string); ok && needsQuote(s) {
			b.WriteString(strconv.Quote(s))
		} else {
			fmt.Fprint(&b, f.Value)
		}
	}
	if err != nil {
		b.WriteString(" error=")
		b.WriteString(strconv.Quote(err.Error()))
	}
	b.WriteByte('\n')
	_, werr := io.WriteString(w, b.String())
	return werr
}

// needsQuote reports whether a text value must be quoted to stay one
// space-separated token on the line: it holds a quote, an equals sign, or
// a rune that is a space or not printable (a line break, a tab; a Device
// Identifier is any UTF-8 string its sender chose).
func needsQuote(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r == '"' || r == '=' || unicode.IsSpace(r) || !unicode.IsPrint(r)
	})
}

// WriteJSON writes one JSON object on one line, keys in Fields order, with
// "frame" and "time" first and "error" last when there is one.
func WriteJSON(w io.Writer, n int, time string, fs []Field, err error) error {
	var b strings.Builder
	fmt.Fprintf(&b, `{"frame":%d,"time":%q`, n, time)
	for _, f := range fs {
		k, _ := json.Marshal(f.Key)
		v, merr := json.Marshal(f.Value)
		if merr != nil {
			return merr
		}
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	if err != nil {
		e, _ := json.Marshal(err.Error())
		b.WriteString(`,"error":`)
		b.Write(e)
	}
	b.WriteString("}\n")
	_, werr := io.WriteString(w, b.String())
	return werr
}
