package store

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUIDStrings lets ids kept as Go strings travel as binary uuids.
// pgx has no binary plan from string to uuid: every such parameter first
// failed binary encoding (formatting an error that quotes the whole value,
// a 100-id array included) and was then sent as text, which cost the batch
// claim and finish about a fifth of their client CPU.
func registerUUIDStrings(m *pgtype.Map) {
	uuidType := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}}
	m.RegisterType(uuidType)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: uuidType}})
}

type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(string); ok && format == pgtype.BinaryFormatCode {
		return stringUUIDPlan{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

// stringUUIDPlan encodes a textual uuid in binary; a string that is no
// uuid fails here, and pgx sends it as text for the server to refuse as
// before.
type stringUUIDPlan struct{}

func (stringUUIDPlan) Encode(value any, buf []byte) ([]byte, error) {
	var u pgtype.UUID
	if err := u.Scan(value.(string)); err != nil {
		return nil, err
	}
	return append(buf, u.Bytes[:]...), nil
}

// NewTaskID returns a new task id in the layout of flightdeck_uuid_v7()
// (migration 00013): 48 bits of Unix milliseconds, then random bits with
// the version 7 and RFC 9562 variant bits. A submit makes its id in Go
// when what it stores with the task depends on the id (the step rows'
// idempotency keys).
func NewTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
