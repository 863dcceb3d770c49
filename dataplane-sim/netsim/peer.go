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

// SetLocalHandler installs h for the packets addressed to the switch
// itself (nil removes it).
func (s *Switch) SetLocalHandler(h LocalHandler) { s.local = h }

// Observer returns the port's observer (nil: none), so that another can be
// chained with it.
func (pt *Port) Observer() PortObserver { return pt.observer }
