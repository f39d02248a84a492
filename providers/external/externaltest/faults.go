package externaltest

import (
	"encoding/binary"
	"hash/fnv"
)

// Fault is what a seeded fault draw (Config.FailRate, Config.HangRate)
// makes a CreateInstance or DeleteInstance call do wrong.
type Fault string

const (
	NoFault Fault = ""
	// FailBefore: exit non-zero having done nothing.
	FailBefore Fault = "fail_before"
	// FailAfter: do the work (make or delete the machine), then exit
	// non-zero — the cloud acted but the answer was lost.
	FailAfter Fault = "fail_after"
	// HangBefore / HangAfter: sleep past runfleet's timeout, before or
	// after doing the work, then exit non-zero if still alive.
	HangBefore Fault = "hang_before"
	HangAfter  Fault = "hang_after"
)

// Acts reports whether the call does its work despite the fault.
func (f Fault) Acts() bool { return f == NoFault || f == FailAfter || f == HangAfter }

// Hangs reports whether the call hangs.
func (f Fault) Hangs() bool { return f == HangBefore || f == HangAfter }

// Draw decides the fault of the n-th call of command on instance id. It is
// a hash of the seed and those three, not a shared random stream, so the
// same seed gives a machine the same fate however the calls interleave.
func (c Config) Draw(command, id string, n int) Fault {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(c.Seed))
	h.Write(b[:])
	h.Write([]byte(command))
	h.Write([]byte{0})
	h.Write([]byte(id))
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
	x := mix(h.Sum64())
	u := float64(x>>11) / (1 << 53)
	after := mix(x)&1 == 1
	switch {
	case u < c.HangRate && after:
		return HangAfter
	case u < c.HangRate:
		return HangBefore
	case u < c.HangRate+c.FailRate && after:
		return FailAfter
	case u < c.HangRate+c.FailRate:
		return FailBefore
	}
	return NoFault
}

// mix is splitmix64's finaliser: FNV alone leaves the low bits of similar
// inputs correlated.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
