package coord

import "strings"

// hashTag is the part of key that Redis Cluster hashes: the content of the
// first {...} when it is not empty, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// slotOf is key's Redis Cluster slot: CRC16 (XMODEM) of its hash tag,
// modulo 16384.
func slotOf(key string) uint16 {
	var crc uint16
	for _, b := range []byte(hashTag(key)) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// inSlotOf names a key for suffix in the cluster slot of key: key+suffix
// when key has a hash tag, else "{key}"+suffix.
func inSlotOf(key, suffix string) string {
	if hashTag(key) != key {
		return key + suffix
	}
	return "{" + key + "}" + suffix
}
