package posixacl

import (
	"bytes"
	"reflect"
	"testing"
)

// The bytes setfacl -m u:1000:rwx writes on a 0755 folder.
var setfaclUser = []byte{
	2, 0, 0, 0,
	1, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
	2, 0, 7, 0, 0xe8, 3, 0, 0,
	4, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
	0x10, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
	0x20, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
}

func TestFromModeEncodeParse(t *testing.T) {
	es := FromMode(0o755, []Entry{{Tag: User, Perm: Read | Write | Execute, ID: 1000}})
	if got := Encode(es); !bytes.Equal(got, setfaclUser) {
		t.Fatalf("Encode = %v, want %v", got, setfaclUser)
	}
	back, err := Parse(setfaclUser)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back[1], Entry{Tag: User, Perm: 7, ID: 1000}) || len(back) != 5 || back[3].Tag != Mask {
		t.Errorf("Parse = %+v", back)
	}
	// No named entry: no mask, as the mode bits alone.
	if es := FromMode(0o750, nil); len(es) != 3 || es[1] != (Entry{Tag: GroupObj, Perm: 5}) || es[2].Perm != 0 {
		t.Errorf("FromMode(0750) = %+v", es)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":       nil,
		"short entry": setfaclUser[:10],
		"version 1":   append([]byte{1, 0, 0, 0}, setfaclUser[4:]...),
		"unknown tag": append([]byte{2, 0, 0, 0}, 0x40, 0, 7, 0, 0, 0, 0, 0),
		"two bits":    append([]byte{2, 0, 0, 0}, 0x03, 0, 7, 0, 0, 0, 0, 0),
	} {
		if _, err := Parse(data); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
