// Package posixacl reads and writes a POSIX access ACL in the form Linux
// stores it in the extended attribute system.posix_acl_access
// (linux/posix_acl_xattr.h), without cgo or libacl: a little-endian
// version (2), then 8-byte entries of tag (u16), permissions (u16) and ID
// (u32, used by named users and groups only).
package posixacl

import (
	"encoding/binary"
	"fmt"
)

// AccessXattr is the extended attribute that holds a file's access ACL.
const AccessXattr = "system.posix_acl_access"

// version is the only format version Linux writes.
const version = 2

// Tag is what an entry applies to.
type Tag uint16

// The entry tags.
const (
	UserObj  Tag = 0x01 // the owner
	User     Tag = 0x02 // a named user
	GroupObj Tag = 0x04 // the owning group
	Group    Tag = 0x08 // a named group
	Mask     Tag = 0x10 // the most any named entry or the owning group gets
	Other    Tag = 0x20 // everyone else
)

// The permission bits.
const (
	Execute uint16 = 1
	Write   uint16 = 2
	Read    uint16 = 4
)

// undefinedID is the ID of an entry that is not a named user or group.
const undefinedID = ^uint32(0)

// Entry is one line of an ACL.
type Entry struct {
	Tag  Tag
	Perm uint16
	ID   uint32 // for User and Group
}

// Parse decodes the attribute's value.
func Parse(data []byte) ([]Entry, error) {
	if len(data) < 4 || (len(data)-4)%8 != 0 {
		return nil, fmt.Errorf("malformed ACL: %d bytes", len(data))
	}
	if v := binary.LittleEndian.Uint32(data); v != version {
		return nil, fmt.Errorf("ACL version %d, want %d", v, version)
	}
	var es []Entry
	for e := data[4:]; len(e) > 0; e = e[8:] {
		en := Entry{Tag: Tag(binary.LittleEndian.Uint16(e)), Perm: binary.LittleEndian.Uint16(e[2:]), ID: binary.LittleEndian.Uint32(e[4:])}
		switch en.Tag {
		case UserObj, User, GroupObj, Group, Mask, Other:
		default:
			return nil, fmt.Errorf("unknown ACL tag %#x", en.Tag)
		}
		es = append(es, en)
	}
	return es, nil
}

// Encode returns the attribute's value for es, which must be in the order
// the kernel requires (by tag, then by ID), with a Mask when there are
// named entries.
func Encode(es []Entry) []byte {
	data := binary.LittleEndian.AppendUint32(nil, version)
	for _, e := range es {
		id := e.ID
		if e.Tag != User && e.Tag != Group {
			id = undefinedID
		}
		data = binary.LittleEndian.AppendUint16(data, uint16(e.Tag))
		data = binary.LittleEndian.AppendUint16(data, e.Perm)
		data = binary.LittleEndian.AppendUint32(data, id)
	}
	return data
}

// FromMode returns the ACL of the mode bits mode plus the named entries
// named (sorted by tag then ID), with the mask the union of the group
// class, as setfacl -m computes it.
func FromMode(mode uint32, named []Entry) []Entry {
	es := []Entry{{Tag: UserObj, Perm: uint16(mode>>6) & 7}}
	mask := uint16(mode>>3) & 7
	for _, n := range named {
		if n.Tag == User {
			es = append(es, n)
			mask |= n.Perm
		}
	}
	es = append(es, Entry{Tag: GroupObj, Perm: uint16(mode>>3) & 7})
	for _, n := range named {
		if n.Tag == Group {
			es = append(es, n)
			mask |= n.Perm
		}
	}
	if len(named) > 0 {
		es = append(es, Entry{Tag: Mask, Perm: mask})
	}
	return append(es, Entry{Tag: Other, Perm: uint16(mode) & 7})
}
