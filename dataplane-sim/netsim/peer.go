package netsim

// Dst returns the node of the QP's receiver (the destination of its data
// packets): a Fast CNP receiver finds the QP a switch names by the
// original destination address and the receiver's QP number.
func (q *QP) Dst() NodeID { return q.dst }

// ControlHandler returns the host's control handler (nil: none), so that
// another can be put in front of it.
func (h *Host) ControlHandler() ControlHandler { return h.control }

// SetReservedBits sets the seven reserved BTH bits (after AckReq) of the
// QP's data packets from now on: a capability an RNIC announces to the
// switches on the path (SCONE Rate Advice leaves the field to the
// implementation; package rateadvice uses one bit).
func (q *QP) SetReservedBits(bits uint8) { q.resv7 = bits & 0x7F }

// ReservedBits returns the seven reserved BTH bits of the QP's data
// packets (SetReservedBits).
func (q *QP) ReservedBits() uint8 { return q.resv7 }

// SetReservedBits sets the seven reserved BTH bits of the data packets of
// every sending QP the host has and of every one added to it later
// (Network.AddFlow; QP.SetReservedBits changes one QP afterwards): a
// capability the RNIC announces on all its QPs, also for flows that start
// after it was configured (a lab's looping traffic adds flows for days).
func (h *Host) SetReservedBits(bits uint8) {
	h.resv7 = bits & 0x7F
	for _, q := range h.SendQPs() {
		q.SetReservedBits(bits)
	}
}

// ReservedBits returns the bits SetReservedBits set (0 by default).
func (h *Host) ReservedBits() uint8 { return h.resv7 }

// SetLocalHandler installs h for the packets addressed to the switch
// itself (nil removes it).
func (s *Switch) SetLocalHandler(h LocalHandler) {
	s.local = h
	s.noteSpecial()
}

// LocalHandler returns the handler SetLocalHandler installed (nil: none),
// so that one installed over it can put it back.
func (s *Switch) LocalHandler() LocalHandler { return s.local }

// Observer returns the port's observer (nil: none), so that another can be
// chained with it.
func (pt *Port) Observer() PortObserver { return pt.observer }
